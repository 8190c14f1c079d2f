package io.vgpu.k8s.cli;

/**
 * Contributes a subcommand to the {@code vgpu} command line from another module; registered in {@code
 * META-INF/services/io.vgpu.k8s.cli.SubcommandProvider} and found with {@link java.util.ServiceLoader}
 * (vgpu-bench contributes {@code placement-bench} this way).
 */
public interface SubcommandProvider {

  /** The subcommand's name, e.g. {@code placement-bench}. */
  String name();

  /**
   * A new instance of the subcommand: an object annotated with picocli's {@code @Command} whose {@code
   * name} equals {@link #name()}, usually implementing {@code Callable<Integer>}.
   */
  Object command();
}
