package io.vgpu.examples.throughput;

import io.vgpu.k8s.cli.SubcommandProvider;

/** Contributes {@code throughput-bench} to the {@code vgpu} command line. */
public final class ThroughputBenchProvider implements SubcommandProvider {
  @Override
  public String name() {
    return ThroughputBenchCommand.NAME;
  }

  @Override
  public Object command() {
    return new ThroughputBenchCommand();
  }
}
