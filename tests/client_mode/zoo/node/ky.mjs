// Good: ky, which waits out Retry-After (seconds or HTTP-date) on 413, 429 and 503 and otherwise
// backs off exponentially (0.3 s * 2^n). Its documented defaults, with POST added (a 429 or 503
// means the request was not processed), the statuses narrowed to 429 and 503, and four retries.
import ky, { HTTPError } from 'ky';
import { RETRIED_STATUSES, run } from './driver.mjs';

async function perform({ method, url, headers, body }) {
  const retry = { limit: 4, methods: ['get', 'post'], statusCodes: RETRIED_STATUSES };
  try {
    const response = await ky(url, { method, headers, body, retry, timeout: 30000 });
    return { status: response.status, text: await response.text() };
  } catch (error) {
    if (!(error instanceof HTTPError)) throw error;
    return { status: error.response.status, text: await error.response.text() };
  }
}

await run(perform);
