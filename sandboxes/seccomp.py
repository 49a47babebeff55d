"""A small seccomp filter for the local sandbox, as raw classic-BPF bytes for `bwrap --seccomp`.

Namespaces and a non-root uid already stop most escapes. The filter closes the channels that
would otherwise let one run leave state for the next one or poke at the kernel: keyrings (per-uid,
they outlive processes), ptrace and cross-process memory access, new namespaces, mounts, BPF,
perf events, userfaultfd and io_uring. Denied calls fail with EPERM (`clone3` with ENOSYS, so the
C library falls back to `clone`, whose flags the filter can inspect). Docker containers get
Docker's own default profile instead.
"""

from __future__ import annotations

import errno
import platform
import struct

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_X32_BIT = 0x40000000
_NEW_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "syslog",
    "name_to_handle_at",
    "open_by_handle_at",
    "lookup_dcookie",
)

_X86_64 = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "perf_event_open": 298,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "acct": 163,
    "quotactl": 179,
    "syslog": 103,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "lookup_dcookie": 212,
    "clone": 56,
    "clone3": 435,
}
_AARCH64 = {
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "keyctl": 219,
    "add_key": 217,
    "request_key": 218,
    "perf_event_open": 241,
    "bpf": 280,
    "userfaultfd": 282,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "mount": 40,
    "umount2": 39,
    "pivot_root": 41,
    "chroot": 51,
    "unshare": 97,
    "setns": 268,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "kexec_load": 104,
    "kexec_file_load": 294,
    "init_module": 105,
    "finit_module": 273,
    "delete_module": 106,
    "swapon": 224,
    "swapoff": 225,
    "reboot": 142,
    "acct": 89,
    "quotactl": 60,
    "syslog": 116,
    "name_to_handle_at": 264,
    "open_by_handle_at": 265,
    "lookup_dcookie": 18,
    "clone": 220,
    "clone3": 435,
}
# machine name -> (AUDIT_ARCH value, syscall table, whether x32 numbers exist)
ARCHITECTURES = {
    "x86_64": (0xC000003E, _X86_64, True),
    "aarch64": (0xC00000B7, _AARCH64, False),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in ARCHITECTURES


def build_filter(machine: str | None = None) -> bytes:
    """The filter program for `machine` (default: this one); raises KeyError if unsupported."""
    arch, table, has_x32 = ARCHITECTURES[machine or platform.machine()]
    deny = _RET_ERRNO | errno.EPERM
    program = [
        _insn(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(_JEQ_K, 1, 0, arch),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),  # another ABI (e.g. i386 int 0x80)
        _insn(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if has_x32:
        program += [_insn(_JGE_K, 0, 1, _X32_BIT), _insn(_RET_K, 0, 0, deny)]
    for name in DENIED:
        program += [_insn(_JEQ_K, 0, 1, table[name]), _insn(_RET_K, 0, 0, deny)]
    program += [
        _insn(_JEQ_K, 0, 1, table["clone3"]),
        _insn(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
        _insn(_JEQ_K, 0, 3, table["clone"]),
        _insn(_LD_W_ABS, 0, 0, 16),  # low 32 bits of the first argument: clone's flags
        _insn(_JSET_K, 0, 1, _NEW_NAMESPACE_FLAGS),
        _insn(_RET_K, 0, 0, deny),
        _insn(_RET_K, 0, 0, _RET_ALLOW),
    ]
    return b"".join(program)
