#!/usr/bin/env python3
"""Extracts the command blocks of markdown files, by the rules in docs/README.md.

doc-blocks.py OUTDIR FILE...: for each FILE, writes OUTDIR/<n>.sh holding its ```sh blocks in
order (those under "<!-- ci: skip (REASON) -->" left out) and prints one line per file,
"<n>.sh<TAB>FILE<TAB>blocks run<TAB>blocks skipped", and one "skip<TAB>FILE:LINE<TAB>REASON"
line per skipped block. It also checks every relative link target exists. Exit 1, naming the
file and line, on a skip marker without a reason or not followed by an sh block, an unclosed
fence, or a broken link.
"""
import os
import re
import sys

SKIP = re.compile(r'^\s*<!--\s*ci:\s*skip\s*(?:\((.*)\))?\s*-->\s*$')
FENCE = re.compile(r'^(\s*)(```+)\s*([\w+-]*)\s*$')
LINK = re.compile(r'\]\(([^)\s]+)\)')


def extract(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    blocks, skipped, errors = [], [], []
    pending = None  # (line, reason) of a skip marker waiting for its block
    i = 0
    while i < len(lines):
        line = lines[i]
        m = SKIP.match(line)
        if m:
            reason = (m.group(1) or '').strip()
            if not reason:
                errors.append(f'{path}:{i+1}: ci: skip needs a reason: <!-- ci: skip (REASON) -->')
            pending = (i + 1, reason)
            i += 1
            continue
        m = FENCE.match(line)
        if m:
            indent, ticks, tag = m.groups()
            start = i
            body = []
            i += 1
            while i < len(lines) and not (lines[i].strip().startswith(ticks) and lines[i].strip().strip('`') == ''):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            if i == len(lines):
                errors.append(f'{path}:{start+1}: fence not closed')
                break
            if pending:
                if tag != 'sh':
                    errors.append(f'{path}:{pending[0]}: ci: skip is not followed by an sh block')
                else:
                    skipped.append((start + 1, pending[1]))
                pending = None
            elif tag == 'sh':
                blocks.append((start + 1, body))
            i += 1
            continue
        if pending and line.strip():
            errors.append(f'{path}:{pending[0]}: ci: skip is not followed by an sh block')
            pending = None
        for target in LINK.findall(line):
            if re.match(r'^[a-z]+:', target) or target.startswith('#'):
                continue
            file = target.split('#', 1)[0]
            if not os.path.exists(os.path.join(os.path.dirname(path), file)):
                errors.append(f'{path}:{i+1}: link to {target}: no such file')
        i += 1
    return blocks, skipped, errors


def main():
    out, files = sys.argv[1], sys.argv[2:]
    failed = False
    for n, path in enumerate(files):
        blocks, skipped, errors = extract(path)
        for e in errors:
            print(e, file=sys.stderr)
            failed = True
        name = f'{n:02d}.sh'
        with open(os.path.join(out, name), 'w', encoding='utf-8') as f:
            for line, body in blocks:
                f.write(f'echo "+++ {path}:{line}"\n')
                f.write('\n'.join(body) + '\n')
        print(f'{name}\t{path}\t{len(blocks)}\t{len(skipped)}')
        for line, reason in skipped:
            print(f'skip\t{path}:{line}\t{reason}')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
