#!/usr/bin/env python3
"""Puts the DT_NEEDED entries of an ELF64 little-endian file in a given order, in place.

    scripts/lib/order-needed.py FILE NAME...

The entries named are moved, within the slots the DT_NEEDED entries already hold, into the
order given; entries not named keep their relative order after them. Nothing else in the file
changes: the dynamic section keeps its size and every other entry its place.

Why (scripts/lib/name-libraries): `patchelf --add-needed` puts new entries first. The dynamic
loader searches objects for a symbol in load order, so libraries added at the front would be
searched before the Swift runtime and the C library for every symbol of the program: about
140,000 instructions more at each start of the launcher. This restores the order the loader
used before (ldd's), with every library now named by its path.
"""
import struct
import sys

DT_NULL, DT_NEEDED, DT_STRTAB = 0, 1, 5
PT_LOAD, PT_DYNAMIC = 1, 2


def fail(message):
    print(f"order-needed: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) < 3:
        print("Usage: scripts/lib/order-needed.py FILE NAME...", file=sys.stderr)
        sys.exit(64)
    path, order = sys.argv[1], sys.argv[2:]
    with open(path, "r+b") as file:
        data = bytearray(file.read())
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            fail(f"{path} is not a 64-bit little-endian ELF file.")
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        headers = [struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
        loads = [h for h in headers if h[0] == PT_LOAD]
        dynamic = next((h for h in headers if h[0] == PT_DYNAMIC), None)
        if dynamic is None:
            fail(f"{path} has no dynamic section.")

        def offset(address):
            for _, _, p_offset, p_vaddr, _, p_filesz, _, _ in loads:
                if p_vaddr <= address < p_vaddr + p_filesz:
                    return p_offset + address - p_vaddr
            fail(f"{path}: address {address:#x} is in no loaded segment.")

        entries, start = [], dynamic[2]
        for i in range(dynamic[5] // 16):
            tag, value = struct.unpack_from("<qQ", data, start + i * 16)
            entries.append((tag, value))
            if tag == DT_NULL:
                break
        strtab = offset(next(value for tag, value in entries if tag == DT_STRTAB))

        def name(value):
            end = data.index(0, strtab + value)
            return data[strtab + value:end].decode()

        slots = [i for i, (tag, _) in enumerate(entries) if tag == DT_NEEDED]
        needed = [entries[i] for i in slots]
        rank = {n: k for k, n in enumerate(order)}
        ordered = sorted(needed, key=lambda entry: rank.get(name(entry[1]), len(order)))  # stable
        for i, entry in zip(slots, ordered):
            struct.pack_into("<qQ", data, start + i * 16, *entry)
        file.seek(0)
        file.write(data)


main()
