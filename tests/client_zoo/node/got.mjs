// Good: got, whose retry option honours Retry-After (seconds and HTTP-date) and otherwise backs
// off exponentially (1 s * 2^n plus noise). Its documented defaults, with POST added (a 429 or
// 503 means the request was not processed), the statuses narrowed to 429 and 503, and a limit
// of four retries (the default two would give up before a third 429 without Retry-After).
import got, { HTTPError } from 'got';
import { RETRIED_STATUSES, run } from './driver.mjs';

async function perform({ method, url, headers, body }) {
  const retry = { limit: 4, methods: ['GET', 'POST'], statusCodes: RETRIED_STATUSES };
  try {
    const response = await got(url, { method, headers, body, retry, timeout: { request: 30000 } });
    return { status: response.statusCode, text: response.body };
  } catch (error) {
    if (!(error instanceof HTTPError)) throw error;
    return { status: error.response.statusCode, text: error.response.body };
  }
}

await run(perform);
