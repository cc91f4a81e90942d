#!/usr/bin/env python3
"""The agent's layering (src/agent/LAYERS, docs/agent.md): every folder of src/agent is
a layer, listed bottom to top, one a line. A file may include headers of its own folder
and of the folders below it, never of one above; no .c file sits at the top of
src/agent, no folder holds more than 15, and every folder is in LAYERS.

usage: agent_layers.py [AGENT_DIR]   (default: $MS_SOURCE_DIR/src/agent)
Exit 0 when the tree keeps the order; 1 with one line per breach."""
import os
import re
import sys

MAX_C_FILES = 15
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of_header(inc, here, agent_dir, folders):
    """The folder of the agent's header that `#include "inc"` names from folder `here`, or
    None when it is not one of the agent's (core/, memsight/, a system header)."""
    if inc.startswith("agent/"):
        rel = inc[len("agent/"):]
    else:  # relative to the including file's folder
        rel = os.path.normpath(os.path.join(here, inc)) if here else inc
        if not os.path.exists(os.path.join(agent_dir, rel)):
            return None
    parts = rel.split("/")
    if len(parts) == 1:
        return ""  # a header at the top of src/agent
    return parts[0]


def check(agent_dir):
    errors = []
    layers_path = os.path.join(agent_dir, "LAYERS")
    try:
        with open(layers_path) as f:
            layers = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError as e:
        return ["%s: cannot read: %s" % (layers_path, e.strerror)]
    if len(set(layers)) != len(layers):
        errors.append("%s: a folder is listed twice" % layers_path)
    rank = {name: i for i, name in enumerate(layers)}
    for name in sorted(os.listdir(agent_dir)):
        path = os.path.join(agent_dir, name)
        if os.path.isdir(path) and name not in rank:
            errors.append("src/agent/%s/: a folder not in LAYERS" % name)
        elif name.endswith(".c"):
            errors.append("src/agent/%s: a .c file at the top of src/agent "
                          "(it belongs in a layer folder)" % name)
        elif name.endswith(".h"):
            errors.append("src/agent/%s: a header at the top of src/agent "
                          "(each layer has its own)" % name)
    for layer in layers:
        folder = os.path.join(agent_dir, layer)
        if not os.path.isdir(folder):
            errors.append("%s: lists %s, which is not a folder" % (layers_path, layer))
            continue
        names = sorted(os.listdir(folder))
        cfiles = [n for n in names if n.endswith(".c")]
        if len(cfiles) > MAX_C_FILES:
            errors.append("src/agent/%s/: %d .c files (at most %d)" %
                          (layer, len(cfiles), MAX_C_FILES))
        if not any(n.endswith(".h") for n in names):
            errors.append("src/agent/%s/: no header of its own" % layer)
        for n in names:
            if not n.endswith((".c", ".h")):
                continue
            with open(os.path.join(folder, n), errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = layer_of_header(m.group(1), layer, agent_dir, rank)
                    if target is None:
                        continue
                    where = "src/agent/%s/%s:%d" % (layer, n, lineno)
                    if target == "":
                        errors.append('%s: includes "%s", a header at the top of src/agent'
                                      % (where, m.group(1)))
                    elif target not in rank:
                        errors.append('%s: includes "%s", of a folder not in LAYERS'
                                      % (where, m.group(1)))
                    elif rank[target] > rank[layer]:
                        errors.append('%s: includes "%s": layer %s is above %s (LAYERS)'
                                      % (where, m.group(1), target, layer))
    return errors


def main():
    if len(sys.argv) > 1:
        agent_dir = sys.argv[1]
    else:
        agent_dir = os.path.join(os.environ.get("MS_SOURCE_DIR", "."), "src", "agent")
    errors = check(agent_dir)
    for e in errors:
        print(e)
    if errors:
        print("agent layers: %d breach(es) of the order in src/agent/LAYERS" % len(errors))
        return 1
    print("agent layers: one way, bottom to top: " +
          " < ".join(open(os.path.join(agent_dir, "LAYERS")).read().split()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
