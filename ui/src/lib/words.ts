/**
 * How the window words a count: "1 segment", "2 segments", never "1 segments". The same rule as
 * the kernel's and the CLI's (`covel_kernel::words::counted`), so they say a count alike.
 */

/** `n` and the noun, singular for one: "1 hook", "0 hooks", "2 cache boundaries". */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
