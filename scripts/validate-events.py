#!/usr/bin/env python3
"""Validates JSON lines (or one JSON document) against a definition of docs/events.schema.json.

  validate-events.py DEFINITION [FILE]   (standard input without FILE)

DEFINITION is one of the schema's $defs: cueLine, cueSheet, event, playLine, daemonLine.
With --document the input is one JSON document (a cue sheet), else one JSON value a line.
Prints one line per invalid value (its line number, the failing path and what is wrong) and
exits 1 if any; 0 when every value is valid. Needs python3-jsonschema (Debian package).
"""
import json
import pathlib
import sys

import jsonschema

SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "docs" / "events.schema.json"


def main(argv):
    document = "--document" in argv
    args = [a for a in argv if a != "--document"]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    definition = args[0]
    schema = json.loads(SCHEMA.read_text())
    if definition not in schema["$defs"]:
        print(f"validate-events: no definition '{definition}' in {SCHEMA}", file=sys.stderr)
        return 2
    jsonschema.Draft202012Validator.check_schema(schema)
    # The definition, resolved inside the whole schema (its $refs point into $defs).
    wrapper = dict(schema)
    wrapper["$ref"] = "#/$defs/" + definition
    validator = jsonschema.Draft202012Validator(wrapper)
    text = pathlib.Path(args[1]).read_text() if len(args) > 1 else sys.stdin.read()
    values = [(1, text)] if document else [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    failures = 0
    for number, raw in values:
        try:
            value = json.loads(raw)
        except ValueError as error:
            print(f"line {number}: not JSON ({error}): {raw[:200]}")
            failures += 1
            continue
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            failures += 1
            # oneOf failures hide the useful part: the deepest reasons of the closest branch.
            best = jsonschema.exceptions.best_match(errors)
            where = "/".join(str(p) for p in best.absolute_path) or "(top)"
            print(f"line {number}: {where}: {best.message}: {raw[:300]}")
    if not values:
        print("validate-events: no values to validate")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
