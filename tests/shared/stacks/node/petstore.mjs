// The Pet Store's own logic, shared by the Express and the Fastify apps: keys and plans, bearer
// auth with its 401 and WWW-Authenticate, categories with their validation and the Error object,
// the deprecated GET /pets/{petId} and GET /store/orders. Framework-neutral: each handler returns
// { status, headers, body } and the app sends it; the rate limiting is each app's library's.

import { parseArgs } from "node:util";

// Requests per minute and per day of each published plan (the interface document, Limits).
export const PLANS = { free: [60, 1000], pro: [300, 10000], business: [1000, 100000] };
const REALM = "petstore";
const NAME_LIMIT = 200; // the document publishes none; a longer name gets a 400 with an Error
// RFC 9745 (a structured-field date) and RFC 8594 (an HTTP-date), as the reference sends them.
const DEPRECATION_HEADERS = {
  Deprecation: `@${Date.UTC(2026, 0, 1) / 1000}`,
  Sunset: new Date(Date.UTC(2028, 0, 1)).toUTCString(),
};
const PETS = { 1: { id: 1, name: "Rex" }, 2: { id: 2, name: "Tom" } };
const ORDERS = [{ id: 1, petId: 2, quantity: 1, status: "placed" }];

// careful-day: careful with the plan's day limit as well (Express only); the day stays a real day.
const CONFIGS = ["careful", "careful-day", "quick-start"];

// `--port 0 --minute-seconds 10 --config careful --key KEY:PLAN ...`; the minute is shortened
// for tests (a library's window is given in milliseconds, so any minute will do).
export function options(argv = process.argv.slice(2)) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: "string", default: "0" },
      "minute-seconds": { type: "string", default: "60" },
      config: { type: "string", default: "careful" },
      key: { type: "string", multiple: true, default: [] },
    },
  });
  const keys = new Map();
  for (const spec of values.key) {
    const [key, plan] = spec.split(":");
    if (!PLANS[plan]) throw new Error(`unknown plan in --key: ${plan}`);
    keys.set(key, plan);
  }
  if (!CONFIGS.includes(values.config)) {
    throw new Error(`--config is one of ${CONFIGS.join(", ")}, not ${values.config}`);
  }
  return {
    port: Number(values.port),
    minuteMs: Number(values["minute-seconds"]) * 1000,
    config: values.config,
    keys,
  };
}

// The one line a launcher waits for.
export function announce(port) {
  process.stdout.write(`petstore-node listening on http://127.0.0.1:${port}/v1\n`);
}

export function errorAnswer(status, code, message, headers = {}) {
  return { status, headers, body: { code, message, status } };
}

// The token of `Authorization: Bearer <token>` (the scheme case-insensitive), or null.
export function bearerToken(authorization) {
  const match = /^\s*bearer +(\S+)\s*$/i.exec(authorization ?? "");
  return match ? match[1] : null;
}

export class Store {
  constructor(keys) {
    this.keys = keys;
    this.categories = [];
  }

  // The caller's plan, or null where the key is missing or unknown.
  planOf(authorization) {
    const token = bearerToken(authorization);
    return token === null ? null : (this.keys.get(token) ?? null);
  }

  // The 401 for a missing or unknown key, or null where the key is known.
  unauthorized(authorization) {
    if (this.planOf(authorization) !== null) return null;
    const given = authorization !== undefined && authorization !== "";
    const challenge = given
      ? `Bearer realm="${REALM}", error="invalid_token"`
      : `Bearer realm="${REALM}"`;
    const message = given
      ? "The API key is invalid."
      : "An API key is required: send it as 'Authorization: Bearer <API_KEY>'.";
    return errorAnswer(401, "unauthorized", message, { "WWW-Authenticate": challenge });
  }

  listCategories() {
    return { status: 200, headers: {}, body: this.categories };
  }

  createCategory(body) {
    const problem = invalidCategory(body);
    if (problem) return errorAnswer(400, "invalid_category", problem);
    const category = { id: this.categories.length + 1, name: body.name };
    if (body.description !== undefined) category.description = body.description;
    this.categories.push(category);
    return { status: 201, headers: {}, body: category };
  }

  getPet(petId) {
    const pet = PETS[petId];
    if (!pet) return errorAnswer(404, "pet_not_found", "No pet has this id.", DEPRECATION_HEADERS);
    return { status: 200, headers: DEPRECATION_HEADERS, body: pet };
  }

  listOrders() {
    return { status: 200, headers: {}, body: ORDERS };
  }
}

function invalidCategory(body) {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return "The body must be a JSON object.";
  }
  if (typeof body.name !== "string") return "name is required and must be a string.";
  if (body.name.trim() === "") return "name must not be blank.";
  if ([...body.name].length > NAME_LIMIT) return `name is longer than ${NAME_LIMIT} characters.`;
  if (body.description !== undefined && typeof body.description !== "string") {
    return "description must be a string.";
  }
  return null;
}

export const notFound = () => errorAnswer(404, "not_found", "No such resource.");

// A framework's own error (a body that is not JSON, one too large) as the API's Error object.
export function frameworkError(error) {
  const status = error.statusCode ?? error.status ?? 500;
  if (status >= 500) return errorAnswer(500, "internal_error", "Internal error.");
  const code = status === 429 ? "rate_limited" : "bad_request";
  return errorAnswer(status, code, `The request was refused: ${error.message}`);
}
