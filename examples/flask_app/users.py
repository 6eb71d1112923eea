"""The host's users: a fixed table, as a stand-in for the application's own database."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from flask_login import UserMixin


@dataclass(frozen=True)
class User(UserMixin):  # type: ignore[misc]  # flask_login ships no type hints
    id: str
    name: str
    password: str


#: the example's accounts by id (a real application checks hashed passwords)
USERS = {
    "ann": User("ann", "Ann", "ann-password"),
    "bob": User("bob", "Bob", "bob-password"),
}


def authenticate(user_id: str, password: str) -> User | None:
    user = USERS.get(user_id)
    if user is None or not hmac.compare_digest(user.password, password):
        return None
    return user
