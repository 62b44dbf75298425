// The Pet Store on Express with express-rate-limit, in two configurations:
//   quick-start: the library's README as it stands (keyed by client address, 100 a window,
//     `standardHeaders: 'draft-8', legacyHeaders: false`), its window one (shortened) minute;
//   careful: keyed by API key, each plan's per-minute limit, the legacy X-RateLimit-* headers
//     (Reset a Unix time in seconds) on every response, 401s and 404s included, an Error on 429;
//   careful-day: careful with a second limiter in front of it for the plan's day (a real day,
//     whatever the minute): two limiters in a row, as the library composes limits. Each one
//     sets the headers it counts, the later one over the earlier: the minute's while the day
//     serves, the day's (Limit 1000, Remaining 0, Reset and Retry-After at the day's end) on the
//     day's 429, which the minute limiter never sees. The day counts what the minute refuses.

import express from "express";
import { ipKeyGenerator, rateLimit } from "express-rate-limit";
import {
  announce,
  bearerToken,
  errorAnswer,
  frameworkError,
  notFound,
  options,
  PLANS,
  Store,
} from "./petstore.mjs";

const settings = options();
const store = new Store(settings.keys);
const app = express();

function send(response, answer) {
  response.status(answer.status).set(answer.headers).json(answer.body);
}

function quickStartLimiter() {
  return rateLimit({
    windowMs: settings.minuteMs,
    limit: 100,
    standardHeaders: "draft-8",
    legacyHeaders: false,
  });
}

const DAY_MS = 24 * 60 * 60 * 1000;

// One of the plan's limits: 0 the minute's, 1 the day's.
function carefulLimiter(windowMs, figure) {
  const plan = (request) => store.planOf(request.headers.authorization);
  return rateLimit({
    windowMs,
    // An unknown caller is counted by address, on the free plan's figure.
    limit: (request) => PLANS[plan(request) ?? "free"][figure],
    keyGenerator: (request) =>
      plan(request) ? `key:${bearerToken(request.headers.authorization)}` : ipKeyGenerator(request.ip),
    legacyHeaders: true,
    standardHeaders: false,
    handler: (request, response) =>
      send(response, errorAnswer(429, "rate_limited", "Too many requests for this API key.")),
  });
}

// First, so that every response (401, 404, a body that is not JSON) passes through it.
if (settings.config === "quick-start") app.use(quickStartLimiter());
if (settings.config === "careful-day") app.use(carefulLimiter(DAY_MS, 1));
if (settings.config !== "quick-start") app.use(carefulLimiter(settings.minuteMs, 0));
app.use(express.json());

const api = express.Router();
api.use((request, response, next) => {
  const denied = store.unauthorized(request.headers.authorization);
  return denied ? send(response, denied) : next();
});
api.get("/categories", (request, response) => send(response, store.listCategories()));
api.post("/categories", (request, response) => send(response, store.createCategory(request.body)));
api.get("/pets/:petId", (request, response) => send(response, store.getPet(request.params.petId)));
api.get("/store/orders", (request, response) => send(response, store.listOrders()));
app.use("/v1", api);
app.use((request, response) => send(response, notFound()));
// Express's own error page is HTML: the API answers its Error object instead.
app.use((error, request, response, next) => send(response, frameworkError(error)));

const server = app.listen(settings.port, "127.0.0.1", () => announce(server.address().port));
