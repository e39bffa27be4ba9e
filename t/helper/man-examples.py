#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# man-examples.py PAGE...: every EXAMPLES entry of the mdoc pages, one JSON
# object a line: {page, n, kind, text}.  An entry is a .Bd -literal block
# or a .Dl line.  mdoc escapes are undone (\e is a backslash, \(aq a
# quote, \- a dash).  kind is "shell" for commands: in a block with
# prompts ("$ " or "# "), the prompted lines and their continuations
# (a line ending in a backslash, a pipe, or inside an open quote) with
# the prompts taken off, the rest being the output shown (or, after an
# interactive command, what is typed to it: "shown"); in a block
# without prompts, every line.  Blocks that are not commands are "unit"
# (a systemd unit), "yaml" (a Prometheus job), "json" (a message line)
# or "output".
import json, re, sys

def unescape(s):
    s = s.replace('\\e', '\x00').replace('\\(aq', "'").replace('\\-', '-')
    s = s.replace('\\&', '').replace('\\(u2026', '\u2026')
    return s.replace('\x00', '\\')

def continued(line):
    # Another line follows: a trailing backslash or pipe, an open quote.
    if line.endswith('\\') or line.rstrip().endswith('|'):
        return True
    return (line.count("'") % 2 == 1) or (line.count('"') - line.count('\\"')) % 2 == 1

def commands(lines, shown):
    prompted = any(re.match(r'^[$#] ', l) for l in lines)
    if not prompted:
        return lines
    out, cont = [], False
    for l in lines:
        if not cont and not re.match(r'^[$#] ', l):
            shown.append(l)
        if cont:
            out.append(l)
            cont = continued(''.join(out[-1:])) and not (out[-1].endswith("'") and out[-1].count("'") == 1 and len(out) > 1 and False)
            continue
        m = re.match(r'^[$#] (.*)$', l)
        if m:
            out.append(m.group(1))
            cont = continued(m.group(1))
    return out

def kind(lines):
    text = '\n'.join(lines)
    if lines and lines[0].startswith('[Unit]'):
        return 'unit'
    if lines and re.match(r'^[a-z_]+:', lines[0]) and not lines[0].startswith(('http', 'ws')):
        return 'yaml'
    if lines and lines[0].startswith('{'):
        return 'json'
    return 'shell'

for page in sys.argv[1:]:
    n, inex, block = 0, False, None
    for raw in open(page, encoding='utf-8'):
        line = raw.rstrip('\n')
        if line.startswith('.Sh '):
            inex = line == '.Sh EXAMPLES'
            continue
        if not inex:
            continue
        if block is not None:
            if line == '.Ed':
                n += 1
                k = kind(block)
                shown = []
                cmd = commands(block, shown) if k == 'shell' else block
                entry = {'page': page.split('/')[-1], 'n': n, 'kind': k,
                         'text': '\n'.join(cmd)}
                if shown:
                    entry['shown'] = '\n'.join(shown)
                print(json.dumps(entry))
                block = None
            else:
                block.append(unescape(line))
        elif line.startswith('.Bd -literal'):
            block = []
        elif line.startswith('.Dl '):
            n += 1
            body = unescape(line[4:])
            if body.startswith('"') and body.endswith('"'):
                body = body[1:-1]
            body = re.sub(r'^[$#] ', '', body)
            print(json.dumps({'page': page.split('/')[-1], 'n': n, 'kind': 'shell',
                              'text': body}))
