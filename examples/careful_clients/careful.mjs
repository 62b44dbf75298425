// A careful Pet Store client in Node 20's own fetch, as `petstore-conformance client` runs it:
// it honours Retry-After (seconds or HTTP-date), backs off exponentially with jitter, gives up
// after five tries, never repeats a 400 or 401, and waits for the Reset when told Remaining 0
// before it repeats the operation.
const { PETSTORE_BASE_URL: base, PETSTORE_API_KEY: key, PETSTORE_OPERATION: operation } = process.env;
const TRIES = 5;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

// RFC 9110 10.2.3: delay-seconds or an HTTP-date; without it, our own exponential back-off
// (1 s, 2 s, 4 s ...) with +-25 % jitter, so that many clients do not come back at once.
function msToWait(retryAfter, attempt) {
  if (retryAfter === null) return 1000 * 2 ** attempt * (0.75 + Math.random() / 2);
  if (/^\s*\d+\s*$/.test(retryAfter)) return Number(retryAfter) * 1000 + Math.random() * 200;
  return Date.parse(retryAfter) - Date.now() + 50;
}

async function perform() {
  const create = operation === 'createCategory';
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const response = await fetch(`${base}/categories`, {
      method: create ? 'POST' : 'GET',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: create ? JSON.stringify({ name: process.env.PETSTORE_CATEGORY_NAME ?? '' }) : undefined,
    });
    const text = await response.text();
    if (response.ok) {
      console.log(response.status, text);
      return response.headers;
    }
    // A 400 or 401 would get the same answer again.
    if (![429, 503].includes(response.status) || attempt === TRIES - 1) {
      console.error(`gave up after ${attempt + 1} tries: ${response.status} ${text.slice(0, 200)}`);
      process.exit(1);
    }
    await sleep(msToWait(response.headers.get('Retry-After'), attempt));
  }
}

let headers = new Headers();
for (let i = 0; i < Number(process.env.PETSTORE_REPEAT ?? '1'); i++) {
  if (headers.get('X-RateLimit-Remaining') === '0') {
    // The window is spent: wait for its Reset (a Unix time) before the next repetition.
    await sleep(Number(headers.get('X-RateLimit-Reset')) * 1000 - Date.now());
  }
  headers = await perform();
}
