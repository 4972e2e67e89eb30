"""eks/*.tf read with python-hcl2, and its IAM policy documents rendered to JSON.

No terraform binary and no AWS account: the configuration is parsed as data. The renderer
evaluates the small expression language the policy documents use (string templates whose
`${...}` parts are references to variables, locals, bucket names and a few identifiers) and
refuses anything else, so a policy it cannot render exactly fails loudly instead of being
approximated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import hcl2

REPO = Path(__file__).resolve().parents[2]
EKS = REPO / "eks"
META_KEYS = {"__is_block__", "__start_line__", "__end_line__", "__comments__"}


# ---------------------------------------------------------------------------
# Parsing. python-hcl2 >= 7 keeps the quotes of string literals and of block labels
# ('"aws_s3_bucket"', '"eu-west-1"'); older releases drop them. norm() removes them and
# the parser's bookkeeping keys so callers see plain values and "${expr}" templates.
# ---------------------------------------------------------------------------


def unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def norm(node: Any) -> Any:
    if isinstance(node, dict):
        return {unquote(k): norm(v) for k, v in node.items() if k not in META_KEYS}
    if isinstance(node, list):
        return [norm(v) for v in node]
    if isinstance(node, str):
        return unquote(node)
    return node


def tf_files() -> list[Path]:
    return sorted(EKS.glob("*.tf"))


@cache
def parsed(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        return norm(hcl2.load(fh))  # type: ignore[no-any-return,unused-ignore]


def blocks(kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Top-level blocks of one kind with a single label: variable, output, module."""
    for path in tf_files():
        for entry in parsed(path).get(kind, []):
            yield from entry.items()


def typed_blocks(kind: str, type_name: str | None = None) -> Iterator[tuple[str, str, Any]]:
    """resource/data blocks as (type, name, body), optionally of one type."""
    for path in tf_files():
        for entry in parsed(path).get(kind, []):
            for rtype, named in entry.items():
                if type_name is not None and rtype != type_name:
                    continue
                for name, body in named.items():
                    yield rtype, name, body


def resources(type_name: str) -> dict[str, dict[str, Any]]:
    return {name: body for _, name, body in typed_blocks("resource", type_name)}


def locals_() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in tf_files():
        for entry in parsed(path).get("locals", []):
            merged.update(entry)
    return merged


def variables() -> dict[str, dict[str, Any]]:
    return dict(blocks("variable"))


def policy_documents() -> dict[str, dict[str, Any]]:
    return {name: body for _, name, body in typed_blocks("data", "aws_iam_policy_document")}


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def statements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """statement blocks of an aws_iam_policy_document, including dynamic ones."""
    found = list(as_list(doc.get("statement")))
    for dyn in as_list(doc.get("dynamic")):
        for label, body in dyn.items():
            if label == "statement":
                for content in as_list(body.get("content")):
                    found.append(content)
    return found


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

TEMPLATE_PART = re.compile(r"\$\{([^{}]+)\}")
REFERENCE = re.compile(r"[A-Za-z_][\w-]*(\.[\w-]+|\[\d+\])*")


class RenderError(Exception):
    """An expression the renderer does not evaluate (it never guesses)."""


@dataclass(frozen=True)
class Renderer:
    """Evaluates the string templates of eks/ as Terraform would for one deployment.

    account_id/partition stand in for the data sources; overrides replace variable
    defaults; identifiers give values to other references the documents may name
    (e.g. "aws_kms_key.data.arn") and are required only if a rendered statement uses them.
    """

    account_id: str = "123456789012"
    partition: str = "aws"
    overrides: Mapping[str, str] = field(default_factory=dict)
    identifiers: Mapping[str, str] = field(default_factory=dict)

    def value(self, template: Any) -> str:
        if not isinstance(template, str):
            raise RenderError(f"not a string template: {template!r}")
        return TEMPLATE_PART.sub(lambda m: self.reference(m.group(1).strip()), template)

    def data(self, node: Any) -> Any:
        """A nested value (maps, lists, templates) with every reference evaluated; a
        reference to a local that holds a map or list is replaced by that structure."""
        if isinstance(node, dict):
            return {self.value(k): self.data(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self.data(v) for v in node]
        if isinstance(node, str):
            whole = re.fullmatch(r"\$\{\(?local\.([\w-]+)\)?\}", node)
            if whole and not isinstance(locals_().get(whole.group(1)), str):
                if whole.group(1) not in locals_():
                    raise RenderError(f"local.{whole.group(1)} is not defined in eks/")
                return self.data(locals_()[whole.group(1)])
            return self.value(node)
        return node

    def reference(self, ref: str) -> str:
        if ref.startswith("(") and ref.endswith(")"):  # a map key written (local.x)
            ref = ref[1:-1].strip()
        if ref in self.identifiers:  # given by the test (a data source, a conditional local)
            return self.identifiers[ref]
        if not REFERENCE.fullmatch(ref):
            raise RenderError(f"expression ${{{ref}}} is not a plain reference")
        parts = ref.split(".")
        if parts[0] == "var" and len(parts) == 2:
            if parts[1] in self.overrides:
                return self.overrides[parts[1]]
            variable = variables().get(parts[1])
            if variable is None or "default" not in variable:
                raise RenderError(f"var.{parts[1]} has no default: pass it in overrides")
            return self.value(variable["default"])
        if parts[0] == "local" and len(parts) == 2:
            if parts[1] not in locals_():
                raise RenderError(f"local.{parts[1]} is not defined in eks/")
            return self.value(locals_()[parts[1]])
        if ref == "data.aws_caller_identity.current.account_id":
            return self.account_id
        if ref == "data.aws_partition.current.partition":
            return self.partition
        if parts[0] == "aws_s3_bucket" and len(parts) == 3:
            bucket = resources("aws_s3_bucket").get(parts[1])
            if bucket is None:
                raise RenderError(f"no resource aws_s3_bucket.{parts[1]}")
            name = self.value(bucket["bucket"])
            if parts[2] in ("id", "bucket"):
                return name
            if parts[2] == "arn":
                return f"arn:{self.partition}:s3:::{name}"
        if ref in self.identifiers:
            return self.identifiers[ref]
        raise RenderError(f"no value for ${{{ref}}}: add it to Renderer.identifiers")

    def bucket_name(self, name: str) -> str:
        return self.reference(f"aws_s3_bucket.{name}.id")

    def statement(self, st: dict[str, Any]) -> dict[str, Any]:
        unsupported = {"not_actions", "not_resources", "principals", "not_principals"} & set(st)
        if unsupported:
            raise RenderError(f"statement {st.get('sid')!r}: {sorted(unsupported)} not rendered")
        out: dict[str, Any] = {}
        if "sid" in st:
            out["Sid"] = self.value(st["sid"])
        out["Effect"] = self.value(st.get("effect", "Allow"))
        out["Action"] = [self.value(a) for a in as_list(st.get("actions"))]
        out["Resource"] = [self.value(r) for r in as_list(st.get("resources"))]
        conditions: dict[str, dict[str, list[str]]] = {}
        for cond in as_list(st.get("condition")):
            test, variable = self.value(cond["test"]), self.value(cond["variable"])
            if variable in conditions.setdefault(test, {}):
                raise RenderError(f"statement {st.get('sid')!r}: two {test} on {variable}")
            conditions[test][variable] = [self.value(v) for v in as_list(cond["values"])]
        if conditions:
            out["Condition"] = conditions
        return out

    def document(self, name: str) -> dict[str, Any]:
        """data.aws_iam_policy_document.<name> as the policy JSON AWS would receive."""
        doc = policy_documents()[name]
        if doc.get("dynamic") or doc.get("for_each") or doc.get("source_policy_documents"):
            raise RenderError(f"{name}: dynamic/for_each/source documents are not rendered")
        return {
            "Version": "2012-10-17",
            "Statement": [self.statement(st) for st in statements(doc)],
        }


def split_by_service(policy: dict[str, Any], service: str) -> tuple[dict[str, Any], list[Any]]:
    """(the policy with only the statements on `service`, the other statements).

    A statement mixing services is refused: it could not be enforced in part.
    """
    kept, others = [], []
    for st in policy["Statement"]:
        services = {a.split(":", 1)[0] for a in st["Action"]}
        if services == {service}:
            kept.append(st)
        elif service in services:
            raise RenderError(f"statement {st.get('Sid')!r} mixes {sorted(services)}")
        else:
            others.append(st)
    return {**policy, "Statement": kept}, others
