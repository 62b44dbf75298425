// The README's driver in JavaScript ("Certifying a client"), certified by the zoo as it stands.
import got from 'got';

const { PETSTORE_BASE_URL: base, PETSTORE_API_KEY: key, PETSTORE_OPERATION: operation } = process.env;
const api = got.extend({
  prefixUrl: base, headers: { authorization: `Bearer ${key}` }, throwHttpErrors: false,
  retry: { limit: 4, methods: ['GET', 'POST'], statusCodes: [429, 503] }, // honours Retry-After
});
for (let i = 0; i < Number(process.env.PETSTORE_REPEAT ?? 1); i++) {
  const answer = operation === 'createCategory'
    ? await api.post('categories', { json: { name: process.env.PETSTORE_CATEGORY_NAME } })
    : await api.get('categories');
  console.log(answer.statusCode, answer.body);
  if (answer.statusCode >= 400) process.exit(1);
}
