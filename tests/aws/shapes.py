#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every name the AWS client sends or reads is one the models have (botocore's service-2.json).

Usage: shapes.py SOURCE-DIR

The names are taken from the client's own source, not from a list kept here: the actions and
the request parameters from src/aws/ec2.c, the XML paths the parser reads from
src/aws/ec2-xml.c (its path macros and the field names compared against them), and the words
it compares values with. Each is then found in the model of API version 2016-11-15: an action
is an operation, a parameter a member of its input (EC2's query serialization: a list named by
its locationName and numbered from 1), a path a chain of output members by locationName (lists
through their "item"), a word one of the enum's values. The stand-in (tests/aws/aws-stub.py)
is held to the same model: every element of its answers must exist there too, so that a test
cannot pass on a field AWS never sends.
"""
import re
import sys
import xml.etree.ElementTree as ET

import botocore.session

src = sys.argv[1]
model = botocore.session.get_session().get_service_model("ec2")
errors = []


def check(cond, what):
    if not cond:
        errors.append(what)


check(model.api_version == "2016-11-15", f"botocore's EC2 model is {model.api_version}")
ec2_c = open(f"{src}/src/aws/ec2.c").read()
xml_c = open(f"{src}/src/aws/ec2-xml.c").read()
ec2_h = open(f"{src}/src/aws/ec2.h").read() + open(f"{src}/src/aws/ec2-xml.h").read()

# --- requests ------------------------------------------------------------------------------
version = re.search(r'#define EC2_API_VERSION "([^"]+)"', ec2_h + ec2_c)
check(version and version.group(1) == model.api_version,
      f"EC2_API_VERSION is {version and version.group(1)}, the model's {model.api_version}")
actions = sorted(set(re.findall(r'"(Describe[A-Za-z]+)"', ec2_c)))
check(actions == ["DescribeVolumeStatus", "DescribeVolumes"], f"actions found: {actions}")
body = re.search(r'"Action=%s&Version=" EC2_API_VERSION "&([A-Za-z]+)\.1=%s"', ec2_c)
check(body is not None, "the request body's format was not found in ec2.c")
for action in actions:
    if action not in model.operation_names:
        errors.append(f"{action} is no EC2 operation")
        continue
    inp = model.operation_model(action).input_shape
    names = {m.serialization.get("name", k): m for k, m in inp.members.items()}
    param = body.group(1) if body else ""
    member = names.get(param)
    check(member is not None and member.type_name == "list",
          f"{action}: {param}.1 is not a list parameter (members: {sorted(names)})")
    if member is not None and member.type_name == "list":
        check(member.member.type_name == "string", f"{action}: {param} does not hold strings")
print("requests:", ", ".join(f"{a}({body.group(1)}.1)" for a in actions))

# --- answers: the paths the parser reads ----------------------------------------------------
macros = dict(re.findall(r'#define ([A-Z_]+) ((?:[A-Z_]+ )?"[^"]*")', xml_c))


def expand(expr):
    expr = expr.strip()
    m = re.fullmatch(r'([A-Z_]+) "([^"]*)"', expr)
    if m:
        return expand(macros[m.group(1)]) + m.group(2)
    m = re.fullmatch(r'"([^"]*)"', expr)
    if m:
        return m.group(1)
    return expand(macros[expr])


paths = set()
for expr in re.findall(r'streq\(path, ((?:[A-Z_]+)(?: "[^"]*")?|"[^"]*")\)', xml_c):
    paths.add(expand(expr))
# Fields compared after the volume item's prefix was taken off (streq(field, "...")).
for field in re.findall(r'streq\(field, "([^"]+)"\)', xml_c):
    paths.add(expand("VOLUME_ITEM") + "/" + field)
paths = sorted(p for p in paths if not p.startswith("Response"))  # the common error shape
check(len(paths) >= 12, f"only {len(paths)} paths found in ec2-xml.c: {paths}")

roots = {op + "Response": model.operation_model(op).output_shape for op in actions}


def walk(path):
    """The shape at an XML path of an answer, or an error string."""
    parts = path.split("/")
    if parts[0] not in roots:
        return f"no operation answers with <{parts[0]}>"
    shape = roots[parts[0]]
    for part in parts[1:]:
        if shape.type_name == "list":
            item = shape.member.serialization.get("name", "item")
            if part != item:
                return f"<{part}> in a list whose items are <{item}>"
            shape = shape.member
            continue
        if shape.type_name != "structure":
            return f"<{part}> inside a {shape.type_name}"
        by_name = {m.serialization.get("name", k[0].lower() + k[1:]): m
                   for k, m in shape.members.items()}
        if part not in by_name:
            return f"<{part}> is no member of {shape.name}"
        shape = by_name[part]
    return shape


for p in paths:
    shape = walk(p)
    check(not isinstance(shape, str), f"{p}: {shape}")
print("paths read:", len(paths))

# --- the words the parser compares values with ---------------------------------------------
detail = walk("DescribeVolumeStatusResponse/volumeStatusSet/item/volumeStatus/details/item/name")
kind = walk("DescribeVolumeStatusResponse/volumeStatusSet/item/initializationStatusDetails/"
            "initializationType")
for word, shape in (("initialization-state", detail),):
    check(f'"{word}"' in xml_c, f"ec2-xml.c no longer compares with {word}")
    check(not isinstance(shape, str) and word in (shape.enum or []), f"{word} is not in the enum")
c_words = open(f"{src}/src/state/findings.c").read() + open(f"{src}/src/daemon/report.c").read()
for word in re.findall(r'"(provisioned-rate|default|volume-copy)"', c_words):
    check(not isinstance(kind, str) and word in kind.enum,
          f"{word} is not an InitializationType ({kind.enum if not isinstance(kind, str) else kind})")

# --- the stand-in's answers -------------------------------------------------------------------
sys.path.insert(0, f"{src}/tests/aws")
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("stub", f"{src}/tests/aws/aws-stub.py")
stub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stub)
vol = {"snapshot": "snap-1", "fast_restored": True, "init_rate": 300, "init_state": "initializing",
       "init_type": "provisioned-rate", "progress": 42, "eta": 60}
answers = {
    "DescribeVolumesResponse": f"<DescribeVolumesResponse><volumeSet>"
                               f"{stub.volume_xml('vol-1', vol)}</volumeSet></DescribeVolumesResponse>",
    "DescribeVolumeStatusResponse": f"<DescribeVolumeStatusResponse><volumeStatusSet>"
                                    f"{stub.status_xml('vol-1', vol)}</volumeStatusSet>"
                                    "</DescribeVolumeStatusResponse>",
}
n = 0
for root, text in answers.items():
    def visit(el, path):
        global n
        n += 1
        shape = walk(path)
        check(not isinstance(shape, str), f"the stub answers {path}: {shape}")
        for child in el:
            visit(child, f"{path}/{child.tag}")
    visit(ET.fromstring(text), root)
print("stub elements:", n)

# --- the EBS direct APIs (REST-JSON): the keys ebs-blocks.c reads ---------------------------
ebs = botocore.session.get_session().get_service_model("ebs")
blocks_c = open(f"{src}/src/aws/ebs-blocks.c").read()
api = re.search(r'#define EBS_API_VERSION "([^"]+)"', open(f"{src}/src/aws/ebs-blocks.h").read())
check(api and api.group(1) == ebs.api_version, f"EBS_API_VERSION is not {ebs.api_version}")
page = ebs.operation_model("ListSnapshotBlocks").output_shape
block = page.members["Blocks"].member
errors_members = set()
for e in ebs.operation_model("ListSnapshotBlocks").error_shapes:
    errors_members |= set(e.members)
keys = sorted(set(re.findall(r'json_object_object_get_ex\([a-z]+, "([A-Za-z_]+)"', blocks_c)))
check(len(keys) >= 7, f"only {len(keys)} keys found in ebs-blocks.c: {keys}")
for key in keys:
    if key in ("__type", "message"):  # the protocol's own: an error's type, its lower-case message
        continue
    check(key in page.members or key in block.members or key in errors_members,
          f"ebs-blocks.c reads {key}, which no ListSnapshotBlocks shape has")
for reason in re.findall(r'"([A-Z_]+_THROTTL[A-Z_]*|ACCOUNT_THROTTLED)"', blocks_c):
    throttled = ebs.shape_for("RequestThrottledException").members["Reason"].enum
    check(reason in throttled, f"{reason} is not a RequestThrottledException reason")
# The Reasons the helper tells apart (ebs-hydrate-aws.c: a KMS key denied), and those the stand-in
# answers with, are its model's, each for its exception.
helper_c = open(f"{src}/src/aws/ebs-hydrate-aws.c").read()
reasons = {e.name: set(e.members["Reason"].enum) for e in
           ebs.operation_model("ListSnapshotBlocks").error_shapes if "Reason" in e.members}
for reason in re.findall(r'"(DEPENDENCY_[A-Z_]+)"', helper_c):
    check(reason in reasons.get("AccessDeniedException", ()),
          f"ebs-hydrate-aws.c compares with {reason}, no AccessDeniedException reason")
stub_src = open(f"{src}/tests/aws/aws-stub.py").read()
for reason in re.findall(r'"Reason": "([A-Z_]+)"', stub_src):
    check(any(reason in r for r in reasons.values()),
          f"the stub answers Reason {reason}, which no ListSnapshotBlocks error has")
print("EBS keys read:", ", ".join(keys))

if errors:
    print("FAIL:\n  " + "\n  ".join(errors))
    sys.exit(1)
print("OK: every name is in botocore's EC2 model", model.api_version, "and EBS model",
      ebs.api_version)
