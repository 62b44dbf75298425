// The Pet Store on Fastify with @fastify/rate-limit, in two configurations:
//   quick-start: the library's README as it stands (keyed by client address, 100 a window of one
//     (shortened) minute), the key checked in an app-wide onRequest hook as Fastify's guides show:
//     its 401s and the stock 404s come before the limiter's route hooks, without its headers;
//   careful: keyed by API key, each plan's per-minute limit, the key checked in preHandler (after
//     the limiter), 404s limited too. The library's x-ratelimit-reset is a delay in seconds
//     (`ttlInSeconds`), with no option for a time: an onSend hook turns it into the Unix time
//     the document asks for.

import Fastify from "fastify";
import rateLimit from "@fastify/rate-limit";
import { announce, bearerToken, frameworkError, notFound, options, PLANS, Store } from "./petstore.mjs";

const settings = options();
const store = new Store(settings.keys);
const app = Fastify();
if (settings.config === "careful-day") throw new Error("careful-day is the Express app's");
const careful = settings.config === "careful";

function send(reply, answer) {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

const authenticate = async (request, reply) => {
  const denied = store.unauthorized(request.headers.authorization);
  if (denied) return send(reply, denied);
};

if (careful) {
  const plan = (request) => store.planOf(request.headers.authorization);
  await app.register(rateLimit, {
    timeWindow: settings.minuteMs,
    max: (request) => PLANS[plan(request) ?? "free"][0],
    keyGenerator: (request) =>
      plan(request) ? `key:${bearerToken(request.headers.authorization)}` : request.ip,
  });
  app.addHook("preHandler", authenticate);
  app.addHook("onSend", async (request, reply) => {
    const delay = reply.getHeader("x-ratelimit-reset");
    if (delay !== undefined) reply.header("x-ratelimit-reset", Math.ceil(Date.now() / 1000) + Number(delay));
  });
  app.setNotFoundHandler({ preHandler: app.rateLimit() }, (request, reply) => send(reply, notFound()));
} else {
  await app.register(rateLimit, { max: 100, timeWindow: settings.minuteMs });
  app.addHook("onRequest", authenticate);
  app.setNotFoundHandler((request, reply) => send(reply, notFound()));
}
// Fastify's own errors ({statusCode, error, message}) as the API's Error object.
app.setErrorHandler((error, request, reply) => send(reply, frameworkError(error)));

app.get("/v1/categories", (request, reply) => send(reply, store.listCategories()));
app.post("/v1/categories", (request, reply) => send(reply, store.createCategory(request.body)));
app.get("/v1/pets/:petId", (request, reply) => send(reply, store.getPet(request.params.petId)));
app.get("/v1/store/orders", (request, reply) => send(reply, store.listOrders()));

const address = await app.listen({ port: settings.port, host: "127.0.0.1" });
announce(new URL(address).port);
