"""The `joulebench` command line: one subcommand per stage, called by the workflow's rules."""

from __future__ import annotations

import argparse
import sys


def _cmd_resolve(args) -> int:
    from joulebench.models import ModelSelectionError, resolve_models

    try:
        names = resolve_models(args.entries)
    except ModelSelectionError as exc:
        print(exc, file=sys.stderr)
        return 2
    print("\n".join(names))
    return 0


def _cmd_catalog(args) -> int:
    import torch

    from joulebench.catalog import build_catalog
    from joulebench.tables import CATALOG_COLUMNS, write_table

    torch.set_num_threads(args.threads)
    models = list(args.models)
    if args.models_file:
        with open(args.models_file) as fh:
            models += [line.strip() for line in fh if line.strip()]
    df = build_catalog(models)
    write_table(df, args.output, CATALOG_COLUMNS)
    failed = int((df["status"] != "ok").sum())
    print(f"catalog: {len(df)} models, {failed} failed -> {args.output}", file=sys.stderr)
    return 0


def _cmd_concat(args) -> int:
    import pandas as pd

    from joulebench.tables import CATALOG_COLUMNS, read_table, write_table

    columns = {"catalog": CATALOG_COLUMNS}[args.table]
    df = pd.concat([read_table(p) for p in args.parts], ignore_index=True)
    write_table(df, args.output, columns)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="joulebench",
        description="Energy per image of image-classification models, beside their accuracy.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("resolve", help="print the exact timm names that model entries select")
    p.add_argument("entries", nargs="+", help="names, bare architectures, globs, all-pretrained")
    p.set_defaults(func=_cmd_resolve)

    p = sub.add_parser("catalog", help="static properties (params, FLOPs...) of models")
    p.add_argument("models", nargs="*", help="exact timm names")
    p.add_argument("--models-file", help="a file with one exact timm name per line")
    p.add_argument("--output", "-o", required=True, help="parquet to write")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.set_defaults(func=_cmd_catalog)

    p = sub.add_parser("concat", help="concatenate per-job tables into one")
    p.add_argument("table", choices=["catalog"])
    p.add_argument("parts", nargs="+")
    p.add_argument("--output", "-o", required=True)
    p.set_defaults(func=_cmd_concat)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
