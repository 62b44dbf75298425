// ky with its default retry settings (retry.limit 2; retry.methods without POST; Retry-After
// read in seconds and as an HTTP-date on a 413, 429 or 503; otherwise 0.3 s * 2^n). Nothing
// set: a client that gives up a refused POST, as RFC 9110 section 9.2.2 advises.
import ky, { HTTPError } from 'ky';
import { run } from './driver.mjs';

async function perform({ method, url, headers, body }) {
  try {
    const response = await ky(url, { method, headers, body });
    return { status: response.status, text: await response.text() };
  } catch (error) {
    if (!(error instanceof HTTPError)) throw error;
    return { status: error.response.status, text: await error.response.text() };
  }
}

await run(perform);
