// Good: axios with axios-retry as its README recommends: retryDelay exponentialDelay (which also
// waits at least the Retry-After given, seconds or HTTP-date), here with a 1 s step (its default
// 100 ms suits network blips, not a rate limit), retryCondition the library's own
// isNetworkOrIdempotentRequestError plus 429 and 503 answers (to any method: a 429 or 503 means
// the request was not processed), four retries.
import axios from 'axios';
import axiosRetry, { exponentialDelay, isNetworkOrIdempotentRequestError } from 'axios-retry';
import { RETRIED_STATUSES, run } from './driver.mjs';

const client = axios.create({ timeout: 30000, responseType: 'text' });
axiosRetry(client, {
  retries: 4,
  retryDelay: (retryNumber, error) => exponentialDelay(retryNumber, error, 1000),
  retryCondition: (error) =>
    isNetworkOrIdempotentRequestError(error) || RETRIED_STATUSES.includes(error.response?.status),
});

async function perform({ method, url, headers, body }) {
  try {
    const response = await client.request({ method, url, headers, data: body });
    return { status: response.status, text: response.data };
  } catch (error) {
    if (!error.response) throw error;
    return { status: error.response.status, text: String(error.response.data) };
  }
}

await run(perform);
