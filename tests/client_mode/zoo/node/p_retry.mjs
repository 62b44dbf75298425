// Faulty, ignores Retry-After: p-retry around fetch as its README shows it (retries: 5, the
// default exponential waits of 1, 2, 4 ... s, AbortError on a 4xx that is not a 429), but the
// waits never look at the Retry-After the server gave.
import pRetry, { AbortError } from 'p-retry';
import { RETRIED_STATUSES, run } from './driver.mjs';

async function perform({ method, url, headers, body }) {
  let last;
  const attempt = async () => {
    const response = await fetch(url, { method, headers, body });
    last = { status: response.status, text: await response.text() };
    if (RETRIED_STATUSES.includes(last.status)) throw new Error(`refused: ${last.status}`);
    if (last.status >= 400) throw new AbortError(`not worth retrying: ${last.status}`);
    return last;
  };
  try {
    return await pRetry(attempt, { retries: 5 });
  } catch (error) {
    if (last === undefined) throw error; // nothing answered: a network failure
    return last;
  }
}

await run(perform);
