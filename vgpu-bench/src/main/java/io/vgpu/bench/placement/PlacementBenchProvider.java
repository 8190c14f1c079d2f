package io.vgpu.bench.placement;

import io.vgpu.k8s.cli.SubcommandProvider;

/** Contributes {@code placement-bench} to the {@code vgpu} command line. */
public final class PlacementBenchProvider implements SubcommandProvider {
  @Override
  public String name() {
    return PlacementBenchCommand.NAME;
  }

  @Override
  public Object command() {
    return new PlacementBenchCommand();
  }
}
