"""Label and field selectors: parsing with kube-apiserver's grammar and messages, and matching.

This module owns three things: the label selector string grammar (``labelSelector=`` on list and
watch), the ``metav1.LabelSelector`` object (``matchLabels`` / ``matchExpressions``, as in a
pod affinity term), and the field selector string grammar (``fieldSelector=``).
Parsing follows ``k8s.io/apimachinery/pkg/labels/selector.go`` and ``pkg/fields/selector.go``
token for token, so a selector that kube-apiserver rejects is rejected here with the same words.

It must not decide which fields a resource supports (``FieldSelector.fields`` lets the server
do that), nor turn errors into HTTP responses. It does no I/O and keeps no state: every value
here is immutable.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.gofmt import go_quote


class SelectorError(ValueError):
    """A selector that kube-apiserver would refuse; the message is kube's own wording."""


# --------------------------------------------------------------------------------------------
# Label keys and values, as k8s.io/apimachinery/pkg/api/validate/content validates them.

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = rf"{_DNS1123_LABEL_FMT}(\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_NAME_MAX = 63
_SUBDOMAIN_MAX = 253
_INT64 = re.compile(r"[+-]?[0-9]+")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Kube's RegexError, double blank before "or" included, so messages compare equal.
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _byte_len(text: str) -> int:
    # Go measures strings in bytes; the limits are byte limits.
    return len(text.encode("utf-8", "surrogatepass"))


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a label key (``[prefix/]name``); empty when it is one."""
    errors: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if _byte_len(prefix) > _SUBDOMAIN_MAX:
                errors.append("prefix part " + _max_len_error(_SUBDOMAIN_MAX))
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errors.append(
                    "prefix part "
                    + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif _byte_len(name) > _NAME_MAX:
        errors.append("name part " + _max_len_error(_NAME_MAX))
    if not _LABEL_KEY_RE.fullmatch(name):
        examples = ("MyName", "my.name", "123-abc")
        errors.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, *examples))
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a label value; empty when it is one (the empty string is)."""
    errors: list[str] = []
    if _byte_len(value) > _NAME_MAX:
        errors.append(_max_len_error(_NAME_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def _field_invalid(path: str, bad_value: Any, detail: str) -> str:
    # field.Invalid(...).Error(): strings are %q-quoted, lists are JSON (a nil list is null).
    shown = go_quote(bad_value) if isinstance(bad_value, str) else json.dumps(bad_value)
    return f"{path}: Invalid value: {shown}: {detail}"


def _aggregate(messages: list[str]) -> str:
    # utilerrors.NewAggregate(...).Error(): one message alone, several de-duplicated in [...].
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --------------------------------------------------------------------------------------------
# Label selectors.


class Operator(str, enum.Enum):
    """A label requirement's operator, spelled as ``k8s.io/apimachinery/pkg/selection``."""

    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_BINARY_OPERATORS = ", ".join(
    op.value
    for op in (
        Operator.IN,
        Operator.NOT_IN,
        Operator.EQUALS,
        Operator.DOUBLE_EQUALS,
        Operator.NOT_EQUALS,
        Operator.GREATER_THAN,
        Operator.LESS_THAN,
    )
)
_INFIX = {
    Operator.EQUALS: "=",
    Operator.DOUBLE_EQUALS: "==",
    Operator.NOT_EQUALS: "!=",
    Operator.IN: " in ",
    Operator.NOT_IN: " notin ",
    Operator.GREATER_THAN: ">",
    Operator.LESS_THAN: "<",
}


@dataclass(frozen=True)
class Requirement:
    """One term of a label selector: a key, an operator and (for most operators) values."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this term.

        ``!=`` and ``notin`` match objects without the key, as in kube: "not production"
        includes what has no environment at all.
        """
        op = self.operator
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        if self.key not in labels:
            return op in (Operator.NOT_IN, Operator.NOT_EQUALS)
        value = labels[self.key]
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return value in self.values
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return value not in self.values
        # gt / lt: both sides must read as 64-bit integers, or the term does not match.
        have, want = _parse_int64(value), _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op is Operator.GREATER_THAN else have < want

    def __str__(self) -> str:
        if self.operator is Operator.EXISTS:
            return self.key
        if self.operator is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        values = ",".join(sorted(self.values))
        if self.operator in (Operator.IN, Operator.NOT_IN):
            values = f"({values})"
        return self.key + _INFIX[self.operator] + values


def _parse_int64(text: str) -> int | None:
    # strconv.ParseInt(text, 10, 64): ASCII digits with an optional sign, in range.
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def new_requirement(key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
    """Build a validated requirement, as ``labels.NewRequirement`` does (all errors at once)."""
    values = list(values)
    errors: list[str] = []
    if key_errors := label_key_errors(key):
        errors.append(_field_invalid("key", key, "; ".join(key_errors)))
    bad_values: Any = values or None  # Go reports an empty value list as null
    detail = ""
    if operator in (Operator.IN, Operator.NOT_IN):
        if not values:
            detail = "for 'in', 'notin' operators, values set can't be empty"
    elif operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(values) != 1:
            detail = "exact-match compatibility requires one single value"
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        if values:
            detail = "values set must be empty for exists and does not exist"
    elif len(values) != 1:  # gt, lt
        detail = "for 'Gt', 'Lt' operators, exactly one value is required"
    if detail:
        errors.append(_field_invalid("values", bad_values, detail))
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        not_integer = "for 'Gt', 'Lt' operators, the value must be an integer"
        errors.extend(
            _field_invalid(f"values[{i}]", value, not_integer)
            for i, value in enumerate(values)
            if _parse_int64(value) is None
        )
    for i, value in enumerate(values):
        if value_errors := label_value_errors(value):
            errors.append(_field_invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    if errors:
        raise SelectorError(_aggregate(errors))
    return Requirement(key, operator, tuple(values))


@dataclass(frozen=True)
class LabelSelector:
    """An AND of requirements; no requirements selects everything.

    ``nothing`` is the selector of a missing ``metav1.LabelSelector`` (a nil pointer in Go),
    which selects no object at all, unlike an empty one.
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (kube's ``Empty()``)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected."""
        if self.nothing:
            return False
        labels = labels or {}
        return all(requirement.matches(labels) for requirement in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


def _sorted_by_key(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    # Kube sorts by key so that equal selectors print and compare the same.
    return tuple(sorted(requirements, key=lambda requirement: requirement.key))


# The lexer and parser below port labels/selector.go: same tokens, same contexts, same messages.


class _Token(enum.Enum):
    END = enum.auto()
    CLOSED_PAR = enum.auto()
    COMMA = enum.auto()
    DOES_NOT_EXIST = enum.auto()
    DOUBLE_EQUALS = enum.auto()
    EQUALS = enum.auto()
    GREATER_THAN = enum.auto()
    IDENTIFIER = enum.auto()
    IN = enum.auto()
    LESS_THAN = enum.auto()
    NOT_EQUALS = enum.auto()
    NOT_IN = enum.auto()
    OPEN_PAR = enum.auto()


_LITERALS = {
    ")": _Token.CLOSED_PAR,
    ",": _Token.COMMA,
    "!": _Token.DOES_NOT_EXIST,
    "==": _Token.DOUBLE_EQUALS,
    "=": _Token.EQUALS,
    ">": _Token.GREATER_THAN,
    "in": _Token.IN,
    "<": _Token.LESS_THAN,
    "!=": _Token.NOT_EQUALS,
    "notin": _Token.NOT_IN,
    "(": _Token.OPEN_PAR,
}
_WHITESPACE = frozenset(" \t\r\n")
_SPECIAL = frozenset("=!(),><")
_OPERATOR_TOKENS = {
    _Token.IN: Operator.IN,
    _Token.EQUALS: Operator.EQUALS,
    _Token.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _Token.GREATER_THAN: Operator.GREATER_THAN,
    _Token.LESS_THAN: Operator.LESS_THAN,
    _Token.NOT_IN: Operator.NOT_IN,
    _Token.NOT_EQUALS: Operator.NOT_EQUALS,
}


def _lex(text: str) -> list[tuple[_Token, str]]:
    items: list[tuple[_Token, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos == end:
            items.append((_Token.END, ""))
            return items
        if text[pos] in _SPECIAL:
            # The longest run of special characters that is still a token: "!=" not "!", "=".
            start, best = pos, None
            while pos < end and text[pos] in _SPECIAL:
                token = _LITERALS.get(text[start : pos + 1])
                if token is None:
                    break
                best, pos = token, pos + 1
            assert best is not None  # every special character is a token on its own
            items.append((best, text[start:pos]))
        else:
            start = pos
            while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((_LITERALS.get(word, _Token.IDENTIFIER), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values_context: bool) -> tuple[_Token, str]:
        return self._in_context(self.items[self.position], values_context)

    def consume(self, values_context: bool) -> tuple[_Token, str]:
        item = self.items[self.position]
        self.position += 1
        return self._in_context(item, values_context)

    @staticmethod
    def _in_context(item: tuple[_Token, str], values_context: bool) -> tuple[_Token, str]:
        # Where a value is expected, "in" and "notin" are plain words: `a in (in, notin)`.
        token, literal = item
        if values_context and token in (_Token.IN, _Token.NOT_IN):
            return _Token.IDENTIFIER, literal
        return token, literal

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead(True)
            if token is _Token.END:
                return requirements
            if token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                raise SelectorError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self.parse_requirement())
            except SelectorError as error:
                raise SelectorError(f"unable to parse requirement: {error}") from None
            token, literal = self.consume(True)
            if token is _Token.END:
                return requirements
            if token is not _Token.COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            token, literal = self.lookahead(True)
            if token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                raise SelectorError(f"found '{literal}', expected: identifier after ','")

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
            return new_requirement(key, operator)
        operator = self.parse_operator()
        if operator in (Operator.IN, Operator.NOT_IN):
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return new_requirement(key, operator, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, Operator | None]:
        operator: Operator | None = None
        token, literal = self.consume(True)
        if token is _Token.DOES_NOT_EXIST:
            operator = Operator.DOES_NOT_EXIST
            token, literal = self.consume(True)
        if token is not _Token.IDENTIFIER:
            raise SelectorError(f"found '{literal}', expected: identifier")
        if key_errors := label_key_errors(literal):
            raise SelectorError(_field_invalid("<nil>", literal, "; ".join(key_errors)))
        next_token, _ = self.lookahead(True)
        if next_token in (_Token.END, _Token.COMMA) and operator is None:
            operator = Operator.EXISTS
        return literal, operator

    def parse_operator(self) -> Operator:
        token, literal = self.consume(False)
        operator = _OPERATOR_TOKENS.get(token)
        if operator is None:
            raise SelectorError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        return operator

    def parse_values(self) -> set[str]:
        token, literal = self.consume(True)
        if token is not _Token.OPEN_PAR:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead(True)
        if token in (_Token.IDENTIFIER, _Token.COMMA):
            values = self.parse_identifiers_list()
            if self.consume(True)[0] is not _Token.CLOSED_PAR:
                raise SelectorError(f"found '{literal}', expected: ')'")
            return values
        if token is _Token.CLOSED_PAR:  # "()" is the set holding the empty string
            self.consume(True)
            return {""}
        raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        # Empty entries are the empty string: "(,a)", "(a,)" and "(a,,b)" all hold "".
        values: set[str] = set()
        while True:
            token, literal = self.consume(True)
            if token is _Token.IDENTIFIER:
                values.add(literal)
                next_token, next_literal = self.lookahead(True)
                if next_token is _Token.COMMA:
                    continue
                if next_token is _Token.CLOSED_PAR:
                    return values
                raise SelectorError(f"found '{next_literal}', expected: ',' or ')'")
            if token is _Token.COMMA:
                if not values:
                    values.add("")
                next_token, _ = self.lookahead(True)
                if next_token is _Token.CLOSED_PAR:
                    values.add("")
                    return values
                if next_token is _Token.COMMA:
                    self.consume(True)
                    values.add("")
                continue
            raise SelectorError(f"found '{literal}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        token, _ = self.lookahead(True)
        if token in (_Token.END, _Token.COMMA):  # "a=" selects the empty value
            return {""}
        token, literal = self.consume(True)
        if token is _Token.IDENTIFIER:
            return {literal}
        raise SelectorError(f"found '{literal}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector`` query parameter; the empty string selects everything.

    Grammar (kube's ``labels.Parse``): comma-joined requirements, each ``key``, ``!key``,
    ``key=v``, ``key==v``, ``key!=v``, ``key in (v1,v2)``, ``key notin (v1,v2)``, ``key>n`` or
    ``key<n``, with blanks allowed around tokens. Raises :class:`SelectorError`.
    """
    return LabelSelector(_sorted_by_key(_Parser(text).parse()))


_SPEC_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def label_selector_from_spec(spec: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` object, as ``metav1.LabelSelectorAsSelector`` does.

    A missing selector (None) selects nothing; an empty one ({}) selects everything.
    ``matchLabels`` entries become ``key=value`` terms and ``matchExpressions`` use the
    capitalised operators In, NotIn, Exists and DoesNotExist. Raises :class:`SelectorError`.
    """
    if spec is None:
        return NOTHING
    if not isinstance(spec, Mapping):
        raise SelectorError(f"a label selector must be an object, not {_json_type(spec)}")
    match_labels = spec.get("matchLabels") or {}
    match_expressions = spec.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in match_labels.items()
    ):
        raise SelectorError("matchLabels: must be an object of string values")
    if not isinstance(match_expressions, list):
        raise SelectorError("matchExpressions: must be a list")
    requirements = [
        new_requirement(key, Operator.EQUALS, [value]) for key, value in match_labels.items()
    ]
    for i, expression in enumerate(match_expressions):
        if not isinstance(expression, Mapping):
            raise SelectorError(f"matchExpressions[{i}]: must be an object")
        key = expression.get("key")
        if not isinstance(key, str):
            raise SelectorError(f"matchExpressions[{i}].key: Required value")
        operator = expression.get("operator")
        if operator not in _SPEC_OPERATORS:
            shown = go_quote(str(operator))
            raise SelectorError(f"{shown} is not a valid label selector operator")
        values = expression.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"matchExpressions[{i}].values: must be a list of strings")
        requirements.append(new_requirement(key, _SPEC_OPERATORS[operator], values))
    return LabelSelector(_sorted_by_key(requirements))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


# --------------------------------------------------------------------------------------------
# Field selectors.


@dataclass(frozen=True)
class FieldRequirement:
    """``field=value`` (or ``==``), or ``field!=value`` when ``negated``."""

    field: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) != self.negated

    def __str__(self) -> str:
        return f"{self.field}{'!=' if self.negated else '='}{escape_field_value(self.value)}"


@dataclass(frozen=True)
class FieldSelector:
    """An AND of field terms; no terms selects everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    @property
    def fields(self) -> frozenset[str]:
        """The field paths used, so the server can refuse those a resource does not index."""
        return frozenset(requirement.field for requirement in self.requirements)

    def requires_exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal for anything to match, or None (kube's
        ``RequiresExactMatch``), so the server can narrow a list by name or node first."""
        for requirement in self.requirements:
            if requirement.field == field and not requirement.negated:
                return requirement.value
        return None

    def matches_fields(self, fields: Mapping[str, str]) -> bool:
        """Match against precomputed field values (kube's ``fields.Set``); absent means ""."""
        return all(requirement.matches(fields) for requirement in self.requirements)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Match an object, reading each field by its dotted path (see :func:`field_value`)."""
        return self.matches_fields({field: field_value(obj, field) for field in self.fields})

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string a field selector compares for ``path`` (``spec.nodeName``) in ``obj``.

    A missing field, or one that is not a scalar, reads as "" (kube's field sets hold "" for
    unset fields); booleans read "true" / "false" (``spec.unschedulable``), numbers in decimal.
    """
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return ""
        value = value.get(part)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return ""


def escape_field_value(value: str) -> str:
    """Escape ``\\``, ``,`` and ``=`` as kube's ``fields.EscapeValue`` does."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    if not any(ch in value for ch in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Kube prints the rune with %v, which is its code point in decimal.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    # Commas split terms unless escaped; the escape stays in the term for the value to undo.
    if not text:
        return []
    terms: list[str] = []
    start, in_slash = 0, False
    for i, ch in enumerate(text):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


_TERM_OPERATORS = ("!=", "==", "=")  # "==" before "=" so no "=" is left on the value


def _split_term(term: str) -> tuple[str, str, str] | None:
    # The first operator found splits the term; the field part has no escapes.
    for i in range(len(term)):
        for op in _TERM_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse_field_selector(text: str) -> FieldSelector:
    """Parse a ``fieldSelector`` query parameter; the empty string selects everything.

    Grammar (kube's ``fields.ParseSelector``): comma-joined ``field=value``, ``field==value``
    or ``field!=value``; in a value, ``\\,``, ``\\=`` and ``\\\\`` stand for the character.
    Blanks are not trimmed, as in kube. Raises :class:`SelectorError`.
    """
    requirements: list[FieldRequirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, raw_value = split
        requirements.append(FieldRequirement(field, _unescape_field_value(raw_value), op == "!="))
    return FieldSelector(tuple(requirements))
