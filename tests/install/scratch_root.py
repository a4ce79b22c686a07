#!/usr/bin/env python3
"""scratch_root.py ROOT DEB: a minimal Debian root made of this host's installed packages, with
DEB installed into it by `dpkg --root` (tests/install/deb.sh).

The root holds the files (`dpkg -L`) and the dpkg status entries of the Essential packages and the
closure of DEB's Depends/Pre-Depends over the host's installed packages, nothing else: what a
minimal Debian system with the package's dependencies looks like, without a mirror. dpkg then
checks DEB's Depends against that status database itself (an unmet one fails the install), and a
library missing from the closure fails the binary's start in the root.

Prints the packages the root holds, one line. Exit 0 when DEB installed, 1 otherwise."""
import os
import re
import subprocess
import sys

ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                      check=True).stdout.strip()


def installed():
    """name -> {field: value} of every installed package (one arch: ours or all)."""
    out = subprocess.run(["dpkg-query", "-W", "-f",
                          "${Package}\t${Architecture}\t${db:Status-Abbrev}\t${Essential}\t"
                          "${Depends}\t${Pre-Depends}\t${Provides}\n"],
                         capture_output=True, text=True, check=True).stdout
    pkgs = {}
    for line in out.splitlines():
        name, arch, status, ess, dep, pre, prov = line.split("\t")
        if not status.startswith("ii") or arch not in (ARCH, "all"):
            continue
        pkgs[name] = {"arch": arch, "essential": ess == "yes", "depends": dep, "pre": pre,
                      "provides": prov}
    return pkgs


def alternatives(field):
    """'a (>= 1) | b, c:any' -> [['a', 'b'], ['c']]"""
    out = []
    for clause in filter(None, (c.strip() for c in field.split(","))):
        out.append([re.split(r"[\s(:]", a.strip(), maxsplit=1)[0] for a in clause.split("|")])
    return out


def closure(pkgs, roots):
    providers = {}
    for name, p in pkgs.items():
        for alt in alternatives(p["provides"]):
            providers.setdefault(alt[0], []).append(name)
    want, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in want:
            continue
        want.add(name)
        for alt in alternatives(pkgs[name]["depends"] + "," + pkgs[name]["pre"]):
            pick = next((a for a in alt if a in pkgs), None)
            if pick is None:
                pick = next((providers[a][0] for a in alt if a in providers), None)
            if pick is None:
                sys.exit(f"scratch_root: {name} needs {' | '.join(alt)}: not installed on this host")
            todo.append(pick)
    return want


def status_stanzas(names):
    """The host's /var/lib/dpkg/status entries of `names`."""
    out = []
    with open("/var/lib/dpkg/status", encoding="utf-8") as f:
        for stanza in f.read().split("\n\n"):
            m = re.search(r"^Package: (\S+)$", stanza, re.M)
            a = re.search(r"^Architecture: (\S+)$", stanza, re.M)
            if m and m.group(1) in names and a and a.group(1) in (ARCH, "all") and \
                    re.search(r"^Status: install ok installed$", stanza, re.M):
                out.append(stanza.strip("\n"))
    return "\n\n".join(out) + "\n\n"


def main():
    root, deb = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pkgs = installed()
    fields = subprocess.run(["dpkg-deb", "-f", deb, "Depends", "Pre-Depends"],
                            capture_output=True, text=True, check=True).stdout
    deps = " ".join(l.split(":", 1)[1] for l in fields.splitlines() if ":" in l)
    roots = [n for n, p in pkgs.items() if p["essential"]]
    for alt in alternatives(deps):
        pick = next((a for a in alt if a in pkgs), None)
        if pick is None:
            sys.exit(f"scratch_root: the package depends on {' | '.join(alt)}: not installed on this host")
        roots.append(pick)
    want = sorted(closure(pkgs, roots))
    # merged /usr as on Debian 12; tar keeps these symlinks (--keep-directory-symlink)
    os.makedirs(os.path.join(root, "usr"), exist_ok=True)
    for d in ("bin", "sbin", "lib", "lib64"):
        os.makedirs(os.path.join(root, "usr", d), exist_ok=True)
        if not os.path.lexists(os.path.join(root, d)):
            os.symlink("usr/" + d, os.path.join(root, d))
    files = []
    for name in want:
        q = name if pkgs[name]["arch"] == "all" else f"{name}:{ARCH}"
        lst = subprocess.run(["dpkg-query", "-L", q], capture_output=True, text=True).stdout
        files += [p.lstrip("/") for p in lst.splitlines()
                  if p.startswith("/") and p != "/." and os.path.lexists(p)]
    listing = os.path.join(root, ".files")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(set(files))) + "\n")
    tar = subprocess.Popen(["tar", "-C", "/", "--no-recursion", "-cf", "-", "-T", listing],
                           stdout=subprocess.PIPE)
    subprocess.run(["tar", "-C", root, "--keep-directory-symlink", "-xf", "-"], stdin=tar.stdout,
                   check=True)
    if tar.wait() != 0:
        sys.exit("scratch_root: tar of the host's package files failed")
    os.unlink(listing)
    # the dpkg database: status of exactly these packages, their file lists
    db = os.path.join(root, "var/lib/dpkg")
    for d in ("info", "updates", "triggers", "alternatives"):
        os.makedirs(os.path.join(db, d), exist_ok=True)
    with open(os.path.join(db, "status"), "w", encoding="utf-8") as f:
        f.write(status_stanzas(set(want)))
    open(os.path.join(db, "available"), "w").close()
    for name in want:
        for base in (name, f"{name}:{ARCH}"):
            src = f"/var/lib/dpkg/info/{base}.list"
            if os.path.exists(src):
                with open(src, "rb") as i, open(os.path.join(db, "info", base + ".list"), "wb") as o:
                    o.write(i.read())
    # what maintainer scripts make (not in any dpkg -L): accounts, the loader cache
    for f in ("etc/passwd", "etc/group", "etc/shadow", "etc/gshadow", "etc/nsswitch.conf",
              "etc/hosts"):
        if os.path.exists("/" + f):
            with open("/" + f, "rb") as i, open(os.path.join(root, f), "wb") as o:
                o.write(i.read())
    for d in ("tmp", "root", "proc", "sys", "dev", "run"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    print(f"{len(want)} packages: {' '.join(want)}")
    sys.stdout.flush()
    r = subprocess.run(["dpkg", "--root", root, "--force-script-chrootless", "-i", deb])
    if r.returncode != 0:
        return 1
    subprocess.run(["chroot", root, "/sbin/ldconfig"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
