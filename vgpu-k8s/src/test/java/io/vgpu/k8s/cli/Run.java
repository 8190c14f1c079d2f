package io.vgpu.k8s.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * What one in-process run of the {@code vgpu} command line printed and returned.
 *
 * @param code the exit code
 * @param out standard output
 * @param err standard error
 */
record Run(int code, String out, String err) {

  /** Runs the command line with these arguments. */
  static Run vgpu(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Vgpu.run(args, new PrintWriter(out), new PrintWriter(err));
    return new Run(code, out.toString(), err.toString());
  }
}
