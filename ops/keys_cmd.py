"""`memstream keys create|list|revoke`: API keys, stored hashed (core.apikeys, sinks.keystore).

``create`` prints the key once; only its sha256 is written to ``api_keys_file``
(default ``<data_dir>/api_keys.json``). Running nodes pick up a change within a second.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from core.apikeys import ROLES
from core.settings import get_settings
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks import keystore


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="API keys: create (printed once), list, revoke")
    ks = p.add_subparsers(dest="keys_cmd", required=True)
    c = ks.add_parser("create", help="create a key and print it once")
    c.add_argument(
        "--tenant",
        default=DEFAULT_TENANT,
        help=f"the namespace of users the key serves (1-64 of A-Z a-z 0-9 _ . : -; default {DEFAULT_TENANT!r})",
    )
    c.add_argument("--role", choices=ROLES, required=True)
    c.add_argument("--apps", default="", help="comma-separated app_ids (app keys)")
    c.add_argument(
        "--global", dest="global_grant", action="store_true", help="app key may write GLOBAL"
    )
    c.add_argument("--note", default="", help="a label shown by `keys list`")
    c.set_defaults(func=create)
    ls = ks.add_parser("list", help="the keys (no secrets), JSON lines")
    ls.add_argument("--all", action="store_true", help="revoked ones too")
    ls.set_defaults(func=list_keys)
    r = ks.add_parser("revoke", help="revoke a key by its kid (see `keys list`)")
    r.add_argument("kid")
    r.set_defaults(func=revoke)


def create(args: argparse.Namespace) -> int:
    path = keystore.key_file(get_settings())
    apps = [a.strip() for a in args.apps.split(",") if a.strip()]
    try:
        key, rec = keystore.create(
            path,
            args.tenant,
            args.role,
            apps,
            global_grant=args.global_grant,
            now=datetime.now(UTC),
            note=args.note,
        )
    except ValueError as exc:
        print(f"memstream keys create: {exc}", file=sys.stderr)
        return 2
    print(key)
    print(
        f"kid {rec.kid}, tenant {rec.tenant}, role {rec.role}"
        + (f", apps {','.join(sorted(rec.apps))}" if rec.apps else "")
        + (", global grant" if rec.global_grant else "")
        + f". Stored hashed in {path}; this is the only time the key is shown.",
        file=sys.stderr,
    )
    return 0


def list_keys(args: argparse.Namespace) -> int:
    for rec in keystore.read_records(keystore.key_file(get_settings())).values():
        if rec.active or args.all:
            print(json.dumps(rec.public(), ensure_ascii=False))
    return 0


def revoke(args: argparse.Namespace) -> int:
    rec = keystore.revoke(keystore.key_file(get_settings()), args.kid, datetime.now(UTC))
    if rec is None:
        print(f"memstream keys revoke: no key with kid {args.kid!r}", file=sys.stderr)
        return 1
    print(json.dumps(rec.public(), ensure_ascii=False))
    return 0
