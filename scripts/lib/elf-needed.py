#!/usr/bin/env python3
"""The DT_NEEDED entries of ELF64 little-endian files (scripts/lib/name-libraries, scripts/bundle).

    scripts/lib/elf-needed.py order FILE NAME...
        Puts FILE's DT_NEEDED entries in the order NAME... gives, in place: the entries named
        move, within the slots DT_NEEDED entries already hold, into that order; the others keep
        their relative order after them. Nothing else in the file changes.

    scripts/lib/elf-needed.py load-order FILE
        Prints the libraries FILE names by absolute path, each after every library it needs
        itself (matched by DT_SONAME or file name), one per line.

Why `order`: `patchelf --add-needed` puts new entries first. The dynamic loader searches the
loaded objects for each symbol in load order, so libraries added at the front were searched
before the Swift runtime and the C library for every symbol of the launcher: 138,000
instructions more at each start. `order` restores the loader's earlier order (ldd's).

Why `load-order`: the launcher opens a slot's libraries one by one (`RTLD_LAZY`) before the
slot's first `RTLD_NOW` open, in the manifest's order. A library opened before one it needs
would make the loader search for that one by name, and a search can find another file (in a
directory of `LD_LIBRARY_PATH`, say). In this order every library a `dlopen` needs is already
loaded, so none is searched for.
"""
import os
import struct
import sys

DT_NULL, DT_NEEDED, DT_STRTAB, DT_SONAME = 0, 1, 5, 14
PT_LOAD, PT_DYNAMIC = 1, 2


def fail(message):
    print(f"elf-needed: {message}", file=sys.stderr)
    sys.exit(1)


class Dynamic:
    """A file's dynamic entries: where they are, what they say."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as file:
            self.data = bytearray(file.read())
        data = self.data
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            fail(f"{path} is not a 64-bit little-endian ELF file.")
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        headers = [struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
        self.loads = [h for h in headers if h[0] == PT_LOAD]
        dynamic = next((h for h in headers if h[0] == PT_DYNAMIC), None)
        if dynamic is None:
            fail(f"{path} has no dynamic section.")
        self.start = dynamic[2]
        self.entries = []
        for i in range(dynamic[5] // 16):
            tag, value = struct.unpack_from("<qQ", data, self.start + i * 16)
            self.entries.append((tag, value))
            if tag == DT_NULL:
                break
        strtab = next((value for tag, value in self.entries if tag == DT_STRTAB), None)
        if strtab is None:
            fail(f"{path} has no dynamic string table.")
        self.strtab = self.offset(strtab)

    def offset(self, address):
        for _, _, p_offset, p_vaddr, _, p_filesz, _, _ in self.loads:
            if p_vaddr <= address < p_vaddr + p_filesz:
                return p_offset + address - p_vaddr
        fail(f"{self.path}: address {address:#x} is in no loaded segment.")

    def string(self, value):
        start = self.strtab + value
        return self.data[start:self.data.index(0, start)].decode()

    def needed(self):
        return [self.string(value) for tag, value in self.entries if tag == DT_NEEDED]

    def soname(self):
        return next((self.string(value) for tag, value in self.entries if tag == DT_SONAME), None)

    def order(self, names):
        slots = [i for i, (tag, _) in enumerate(self.entries) if tag == DT_NEEDED]
        rank = {name: k for k, name in enumerate(names)}
        entries = sorted((self.entries[i] for i in slots), key=lambda e: rank.get(self.string(e[1]), len(names)))
        for i, entry in zip(slots, entries):
            struct.pack_into("<qQ", self.data, self.start + i * 16, *entry)
        with open(self.path, "r+b") as file:
            file.write(self.data)


def load_order(path):
    libraries = [name for name in Dynamic(path).needed() if name.startswith("/")]
    by_name, needs = {}, {}
    for library in libraries:
        dynamic = Dynamic(library)
        by_name[os.path.basename(library)] = library
        by_name[dynamic.soname() or os.path.basename(library)] = library
        needs[library] = dynamic.needed()
    ordered, state = [], {}

    def visit(library):  # depth first: what it needs, then itself
        if state.get(library) == "done":
            return
        if state.get(library) == "visiting":
            return  # a cycle (none among the toolchain's): the first opened finds the other by search
        state[library] = "visiting"
        for name in needs[library]:
            dependency = name if name in needs else by_name.get(name)
            if dependency in needs:
                visit(dependency)
        state[library] = "done"
        ordered.append(library)

    for library in libraries:
        visit(library)
    print("\n".join(ordered))


def main():
    arguments = sys.argv[1:]
    if len(arguments) >= 2 and arguments[0] == "order":
        Dynamic(arguments[1]).order(arguments[2:])
    elif len(arguments) == 2 and arguments[0] == "load-order":
        load_order(arguments[1])
    else:
        print("Usage: scripts/lib/elf-needed.py order FILE NAME... | load-order FILE", file=sys.stderr)
        sys.exit(64)


main()
