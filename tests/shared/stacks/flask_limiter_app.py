"""The Pet Store on Flask with Flask-Limiter, as a vendor writes it: run as
`python -m tests.shared.stacks.flask_limiter_app --key KEY:PLAN ... --minute-seconds N
--configuration CONFIGURATION`; it prints `flask-limiter listening on URL` once it serves.

"careful": limits per key and plan (callers without a valid key per address, at the free plan's),
the library's own headers on: X-RateLimit-Limit, -Remaining, -Reset and a Retry-After on every
response, 200 and 201 included. "quick-start": the documentation's first example, keyed by
`get_remote_address` with its "200 per day", "50 per hour" and no rate-limit headers at all.
The day profile's configurations (petstore.py) are careful ones with a real day or none.

With a minute and a day, Flask-Limiter checks the shorter first and stops at the first one that
refuses: the headers report the minute (the first limit) while both serve, and the refusing
limit on a 429, the day's (Limit 1000, Remaining 0, Reset and Retry-After at the day's end) once
the day refuses. A request the minute refuses is not counted by the day. Remaining is read when
the response is made, not returned by the hit: in a concurrent burst two responses may both say
Remaining 0 although no more than the limit was served.
"""

from __future__ import annotations

import flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from werkzeug.exceptions import HTTPException
from werkzeug.serving import make_server

from tests.shared.stacks import petstore
from tests.shared.stacks.petstore import Options


def build_app(options: Options) -> flask.Flask:
    app = flask.Flask(__name__)
    categories = petstore.Categories()

    def caller_key() -> str | None:
        key, _ = petstore.bearer_key(flask.request.headers.get("Authorization"), options.keys)
        return key

    def identity() -> str:
        key = caller_key()
        return f"key:{key}" if key else f"address:{get_remote_address()}"

    if options.careful:
        Limiter(
            identity,
            app=app,
            # Application limits are one count for the whole app; default limits would give
            # every endpoint a quota of its own.
            application_limits=[lambda: options.limits(caller_key())],
            headers_enabled=True,
            storage_uri="memory://",
            strategy=options.strategy,
        )
    else:
        Limiter(
            get_remote_address,
            app=app,
            default_limits=options.quick_start_limits(),
            storage_uri="memory://",
        )

    def json_response(body: object, status: int = 200) -> flask.Response:
        return flask.Response(flask.json.dumps(body), status, mimetype="application/json")

    def authenticated(serve):  # noqa: ANN001, ANN202 - a view and its wrapper
        def view(**params: str) -> flask.Response:
            _, refusal = petstore.bearer_key(
                flask.request.headers.get("Authorization"), options.keys
            )
            if refusal is not None:
                response = json_response(refusal, 401)
                response.headers["WWW-Authenticate"] = petstore.CHALLENGE
                return response
            return serve(**params)

        view.__name__ = serve.__name__
        return view

    @app.get("/v1/categories")
    @authenticated
    def list_categories() -> flask.Response:
        return json_response(categories.listing())

    @app.post("/v1/categories")
    @authenticated
    def create_category() -> flask.Response:
        body = flask.request.get_data(cache=False)
        status, answer = categories.create(body, flask.request.headers.get("Content-Type"))
        return json_response(answer, status)

    @app.get("/v1/pets/<pet_id>")
    @authenticated
    def get_pet(pet_id: str) -> flask.Response:
        pet = petstore.PETS.get(pet_id)
        if pet is None:
            response = json_response(petstore.error(404, "not_found", "No pet with that id."), 404)
        else:
            response = json_response(pet)
        response.headers.update(petstore.DEPRECATION_HEADERS)
        return response

    @app.get("/v1/store/orders")
    @authenticated
    def list_orders() -> flask.Response:
        return json_response(petstore.ORDERS)

    @app.route("/v1/<path:unknown>", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
    @authenticated
    def not_found(unknown: str) -> flask.Response:
        # Routed, not left to the router's 404: the limiter counts (and heads) only what a
        # view answers.
        return json_response(petstore.error(404, "not_found", "No such resource."), 404)

    @app.errorhandler(HTTPException)
    def http_error(exception: HTTPException) -> flask.Response:
        # The framework's own pages are HTML; a careful vendor answers JSON Errors everywhere.
        status = exception.code or 500
        code = "rate_limited" if status == 429 else (exception.name or "error").lower()
        message = exception.description or exception.name or "error"
        response = json_response(petstore.error(status, code.replace(" ", "_"), message), status)
        for name, value in exception.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
        return response

    return app


def main() -> None:
    options = petstore.parse_options()
    server = make_server("127.0.0.1", options.port, build_app(options), threaded=True)
    petstore.announce("flask-limiter", server.server_port)
    server.serve_forever()


if __name__ == "__main__":
    main()
