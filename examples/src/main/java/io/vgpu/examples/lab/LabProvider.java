package io.vgpu.examples.lab;

import io.vgpu.k8s.cli.SubcommandProvider;

/** Contributes {@code lab} to the {@code vgpu} command line. */
public final class LabProvider implements SubcommandProvider {
  @Override
  public String name() {
    return LabCommand.NAME;
  }

  @Override
  public Object command() {
    return new LabCommand();
  }
}
