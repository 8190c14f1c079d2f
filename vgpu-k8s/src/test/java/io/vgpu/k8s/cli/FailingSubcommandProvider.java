package io.vgpu.k8s.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** A subcommand contributed through the SPI (registered in test resources) that fails unexpectedly. */
public final class FailingSubcommandProvider implements SubcommandProvider {
  @Override
  public String name() {
    return "fail";
  }

  @Override
  public Object command() {
    return new Fail();
  }

  @Command(name = "fail", description = "Fails with an internal error.")
  static final class Fail implements Callable<Integer> {
    @Override
    public Integer call() {
      throw new IllegalStateException("the ledger is on fire");
    }
  }
}
