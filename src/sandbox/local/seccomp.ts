/**
 * A seccomp filter for the jail (classic BPF, as bubblewrap's --seccomp reads it). It denies, with
 * EPERM, the system calls that reach into other processes or into kernel subsystems analysis never
 * needs: ptrace and process_vm_* (code could otherwise clear the death signal of the jail's init
 * and outlive its host), kcmp, pidfd_getfd, keyrings, bpf, perf, userfaultfd and io_uring.
 * Other architectures' calls (x32, i386 on x86_64) are denied outright.
 * @module
 */
import { arch } from 'node:process'

const DENIED = [
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'kcmp',
  'pidfd_getfd',
  'add_key',
  'request_key',
  'keyctl',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
] as const

const TABLES: Record<
  string,
  {
    audit: number
    numbers: Record<(typeof DENIED)[number], number>
    x32?: boolean
    /** clone, unshare, clone3: checked for CLONE_NEWUSER where bubblewrap's --disable-userns is not there. */
    spawning: { clone: number; unshare: number; clone3: number }
  }
> = {
  x64: {
    audit: 0xc000003e,
    x32: true,
    spawning: { clone: 56, unshare: 272, clone3: 435 },
    numbers: {
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      kcmp: 312,
      pidfd_getfd: 438,
      add_key: 248,
      request_key: 249,
      keyctl: 250,
      bpf: 321,
      perf_event_open: 298,
      userfaultfd: 323,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    spawning: { clone: 220, unshare: 97, clone3: 435 },
    numbers: {
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kcmp: 272,
      pidfd_getfd: 438,
      add_key: 217,
      request_key: 218,
      keyctl: 219,
      bpf: 280,
      perf_event_open: 241,
      userfaultfd: 282,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
    },
  },
}

const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const JSET_K = 0x45
const RET_ERRNO_ENOSYS = 0x00050000 | 38
const CLONE_NEWUSER = 0x10000000
/** Low 32 bits of the first argument (little-endian). */
const ARG0_LOW = 16
const RET_K = 0x06
const RET_ALLOW = 0x7fff0000
const RET_ERRNO_EPERM = 0x00050000 | 1
const X32_SYSCALL_BIT = 0x40000000

/**
 * The filter for this machine's architecture, or undefined where there is no table for it.
 * `denyUserns`: no new user namespaces (clone and unshare with CLONE_NEWUSER fail with EPERM;
 * clone3, whose flags a filter cannot read, fails with ENOSYS so libc falls back to clone), for
 * jails that bubblewrap's --disable-userns does not cover (forked from the zygote).
 */
export function seccompFilter(
  architecture: string = arch,
  { denyUserns = false }: { denyUserns?: boolean } = {},
): Buffer | undefined {
  const table = TABLES[architecture]
  if (!table) return undefined
  const program: Array<[number, number, number, number]> = []
  // [code, jt, jf, k]; jumps are relative to the next instruction, patched once the end is known.
  program.push([LD_W_ABS, 0, 0, 4]) // seccomp_data.arch
  program.push([JEQ_K, 1, 0, table.audit])
  program.push([RET_K, 0, 0, RET_ERRNO_EPERM]) // another architecture's system call
  program.push([LD_W_ABS, 0, 0, 0]) // seccomp_data.nr
  const jumps: number[] = []
  if (table.x32) {
    jumps.push(program.length)
    program.push([JGE_K, 0, 0, X32_SYSCALL_BIT])
  }
  for (const name of DENIED) {
    jumps.push(program.length)
    program.push([JEQ_K, 0, 0, table.numbers[name]])
  }
  const toFlags: number[] = []
  if (denyUserns) {
    toFlags.push(program.length)
    program.push([JEQ_K, 0, 0, table.spawning.clone])
    toFlags.push(program.length)
    program.push([JEQ_K, 0, 0, table.spawning.unshare])
    program.push([JEQ_K, 0, 1, table.spawning.clone3])
    program.push([RET_K, 0, 0, RET_ERRNO_ENOSYS])
  }
  program.push([RET_K, 0, 0, RET_ALLOW])
  if (denyUserns) {
    const flags = program.length
    for (const at of toFlags) (program[at] as [number, number, number, number])[1] = flags - at - 1
    program.push([LD_W_ABS, 0, 0, ARG0_LOW])
    jumps.push(program.length)
    program.push([JSET_K, 0, 0, CLONE_NEWUSER])
    program.push([RET_K, 0, 0, RET_ALLOW])
  }
  const deny = program.length
  program.push([RET_K, 0, 0, RET_ERRNO_EPERM])
  for (const at of jumps) {
    const instruction = program[at] as [number, number, number, number]
    instruction[1] = deny - at - 1
  }
  const buffer = Buffer.alloc(program.length * 8)
  program.forEach(([code, jt, jf, k], i) => {
    buffer.writeUInt16LE(code, i * 8)
    buffer.writeUInt8(jt, i * 8 + 2)
    buffer.writeUInt8(jf, i * 8 + 3)
    buffer.writeUInt32LE(k >>> 0, i * 8 + 4)
  })
  return buffer
}
