"""The host's Flask application. relayline asks it who the signed-in user is
(``current_user=``), so a thread belongs to the Flask-Login user who started it and
nobody else can read it, stream it or subscribe to it.

Run it (with Redis and the worker of ``examples.flask_app.tasks``)::

    FLASK_SECRET_KEY=change-me REDIS_URL=redis://127.0.0.1:6379/0 \\
        flask --app examples.flask_app.app run
"""

from __future__ import annotations

from collections.abc import Mapping

from flask import Flask, redirect, request, url_for
from flask_login import LoginManager, current_user, login_user, logout_user
from werkzeug.wrappers import Response

from examples.flask_app.users import USERS, User, authenticate
from relayline import Relayline

relayline = Relayline()
login_manager = LoginManager()


def signed_in_user() -> str | None:
    """relayline's owner of the request: the Flask-Login user, or None (401)."""
    return str(current_user.get_id()) if current_user.is_authenticated else None


@login_manager.user_loader  # type: ignore[untyped-decorator]  # no hints in flask_login
def load_user(user_id: str) -> User | None:
    return USERS.get(user_id)


def create_app(config: Mapping[str, object] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.from_prefixed_env()  # FLASK_SECRET_KEY signs the session cookie
    app.config.update(config or {})
    login_manager.init_app(app)
    # Settings come from RELAYLINE_* keys of app.config over the environment.
    relayline.init_app(app, url_prefix="/ai", current_user=signed_in_user)

    @app.get("/")
    def home() -> str:
        if not current_user.is_authenticated:
            return (
                '<form method="post" action="/login"><input name="username">'
                '<input name="password" type="password"><button>Sign in</button></form>'
            )
        return f'<p>Hello {current_user.name}. <a href="/ai/">Chat</a></p>'

    @app.post("/login")
    def login() -> Response | tuple[str, int]:
        user = authenticate(request.form.get("username", ""), request.form.get("password", ""))
        if user is None:
            return "Wrong user name or password.", 401
        login_user(user)
        return redirect(url_for("home"))

    @app.post("/logout")
    def logout() -> Response:
        logout_user()
        return redirect(url_for("home"))

    return app
