// got with its default retry settings (retry.limit 2; retry.methods without POST, as urllib3's;
// Retry-After read in seconds and as an HTTP-date on a 413, 429 or 503; otherwise 1 s, 2 s plus
// up to 0.1 s of noise). Nothing set but the key and throwHttpErrors: a client that gives up
// a refused POST, as RFC 9110 section 9.2.2 advises, and after two retries of a GET.
import got from 'got';
import { run } from './driver.mjs';

const api = got.extend({ throwHttpErrors: false });

async function perform({ method, url, headers, body }) {
  const response = await api(url, { method, headers, body });
  return { status: response.statusCode, text: response.body };
}

await run(perform);
