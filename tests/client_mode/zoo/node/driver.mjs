// What every Node client of the zoo shares: the PETSTORE_* contract of `petstore-conformance
// client` read into one request, and the loop that performs it PETSTORE_REPEAT times, prints
// each result and exits non-zero when the client gave up. Each client brings only its retry
// policy: `perform(call)` resolves to the last answer, `{status, text}`.
export const RETRIED_STATUSES = [429, 503]; // what a rate-limited or overloaded server answers

export function call() {
  const env = process.env;
  const create = env.PETSTORE_OPERATION === 'createCategory';
  return {
    method: create ? 'POST' : 'GET',
    url: `${env.PETSTORE_BASE_URL}/categories`,
    headers: { Authorization: `Bearer ${env.PETSTORE_API_KEY}`, 'Content-Type': 'application/json' },
    body: create ? JSON.stringify({ name: env.PETSTORE_CATEGORY_NAME ?? '' }) : undefined,
  };
}

export async function run(perform) {
  for (let i = 0; i < Number(process.env.PETSTORE_REPEAT ?? '1'); i++) {
    const { status, text } = await perform(call());
    if (status >= 400) {
      console.error(`gave up: ${status} ${text.slice(0, 200)}`);
      process.exit(1);
    }
    console.log(status, text);
  }
}
