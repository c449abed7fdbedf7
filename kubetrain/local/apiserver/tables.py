"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` asks for with
``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``.

This module assembles the table: the built-in printer of the kind (:mod:`printers`), the
printer-column convertor of custom resources
(``apiextensions-apiserver/pkg/registry/customresource/tableconvertor``, reading cells with
:mod:`jsonpath`), or the default convertor (NAME, CREATED AT) for kinds without a printer,
such as LimitRange and CustomResourceDefinition; then each row's object as asked
(``includeObject``). Columns and ages are :mod:`tablecolumns`'. It does no I/O and reads no
clock: the caller passes ``now``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain import gofmt, timefmt
from kubetrain.local.apiserver import jsonpath, printers, tablecolumns

Obj = dict[str, Any]
Row = tablecolumns.Row


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _default_table(objects: list[Obj], now: datetime) -> tuple[list[dict[str, Any]], list[Row]]:
    """``rest.NewDefaultTableConvertor``: NAME and CREATED AT (RFC 3339, UTC)."""
    columns = [
        tablecolumns.NAME,
        {**tablecolumns.column("Created At", "date", tablecolumns.AGE_DOC)},
    ]
    rows = []
    for obj in objects:
        created = tablecolumns.parse_time(_meta(obj).get("creationTimestamp"))
        shown = timefmt.seconds(created) if created else "0001-01-01T00:00:00Z"
        rows.append(([_meta(obj).get("name", ""), shown], []))
    return columns, rows


def _go_print(value: Any) -> str:
    """``jsonpath.PrintResults`` of one value: objects and lists as JSON, scalars as Go's
    ``fmt.Print`` writes them."""
    if isinstance(value, dict | list):
        return gofmt.go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return gofmt.go_float(value)
    return str(value)


def _custom_cell(kind: str, value: Any, now: datetime) -> Any:
    """``cellForJSONValue``: a printer-column value in the column's type, or None."""
    if value is None:
        return None
    if kind == "string":
        return _go_print(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        if value in ("", "null"):
            return "<unknown>"
        return tablecolumns.since(value, now) if tablecolumns.parse_time(value) else "<invalid>"
    return None


def _custom_table(
    columns: list[dict[str, Any]], objects: list[Obj], now: datetime
) -> tuple[list[dict[str, Any]], list[Row]]:
    """Printer columns of a custom resource: NAME, then each column's first JSONPath result."""
    if not columns:
        columns = [
            {
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": tablecolumns.AGE_DOC,
            }
        ]
    definitions = [tablecolumns.NAME]
    for column in columns:
        path = str(column.get("jsonPath", ""))
        description = column.get("description") or (
            f"Custom resource definition column (in JSONPath format): {path}"
        )
        definitions.append(
            tablecolumns.column(
                str(column.get("name", "")),
                str(column.get("type", "string")),
                description,
                fmt=str(column.get("format") or ""),
                priority=int(column.get("priority") or 0),
            )
        )
    rows = []
    for obj in objects:
        cells: list[Any] = [_meta(obj).get("name", "")]
        for column in columns:
            try:
                found = jsonpath.jsonpath(obj, str(column.get("jsonPath", "")))
            except ValueError:
                found = []
            value = found[0] if found else None
            cells.append(_custom_cell(str(column.get("type", "string")), value, now))
        rows.append((cells, []))
    return definitions, rows


def _row_object(obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(_meta(obj)),
    }


def _split_kind(kind_key: str) -> tuple[str, str]:
    """``v1/Pod`` -> (``""``, ``Pod``); ``kubeflow.org/v1/PyTorchJob`` -> (group, kind)."""
    parts = kind_key.split("/")
    if len(parts) == 2:
        return "", parts[1]
    if len(parts) == 3:
        return parts[0], parts[2]
    raise ValueError(f"kind key must be [group/]version/Kind, got {kind_key!r}")


def table(
    kind_key: str,
    objects: list[Obj],
    *,
    crd_columns: list[dict[str, Any]] | None = None,
    include_object: str = "Metadata",
    now: datetime,
    list_meta: dict[str, Any] | None = None,
    no_headers: bool = False,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (a list's items, or one object).

    ``kind_key`` is ``[group/]version/Kind``. Pass ``crd_columns`` (the served version's
    ``additionalPrinterColumns``, possibly empty) for a custom resource; kinds with neither a
    built-in printer nor columns get NAME and CREATED AT. ``include_object`` is the
    ``includeObject`` query parameter: ``Metadata`` (the default; a PartialObjectMetadata
    per row), ``Object`` or ``None``. ``list_meta`` (resourceVersion, continue,
    remainingItemCount) becomes the table's metadata; ``no_headers`` (``TableOptions``) drops
    the column definitions, as kube does for watch events after the first.
    """
    group, kind = _split_kind(kind_key)
    if crd_columns is not None:
        columns, rows = _custom_table(crd_columns, objects, now)
    elif (group, kind) in printers.PRINTERS:
        columns, printer = printers.PRINTERS[(group, kind)]
        rows = [printer(obj, now) for obj in objects]
    else:
        columns, rows = _default_table(objects, now)
    result_rows = []
    for obj, (cells, conditions) in zip(objects, rows, strict=True):
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object)
        result_rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta or {}),
        "columnDefinitions": None if no_headers else [dict(c) for c in columns],
        "rows": result_rows,
    }
