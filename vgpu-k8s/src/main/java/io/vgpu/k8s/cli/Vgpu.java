package io.vgpu.k8s.cli;

import io.vgpu.k8s.yaml.InputException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The {@code vgpu} command line. Subcommands: {@code simulate}, {@code inventory}, {@code scheduler}, plus any that other modules contribute
 * through {@link SubcommandProvider}. Bad input exits with code 2 and one line on stderr; an internal
 * error exits with 1 and one line, with the stack trace only under {@code --debug} or at debug log level.
 */
@Command(
    name = "vgpu",
    mixinStandardHelpOptions = true,
    versionProvider = Vgpu.Version.class,
    description = "GPU sharing for Kubernetes, speaking HAMi's wire formats.",
    subcommands = {SimulateCommand.class, InventoryCommand.class, SchedulerCommand.class, DevicePluginCommand.class, CertificatesCommand.class, CommandLine.HelpCommand.class})
public final class Vgpu implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(Vgpu.class);

  /** Exit code for input the user can fix. */
  public static final int EXIT_BAD_INPUT = 2;
  /** Exit code for an internal error. */
  public static final int EXIT_INTERNAL = 1;

  @Option(names = "--debug", scope = ScopeType.INHERIT, description = "Print stack traces of errors.")
  boolean debug;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a subcommand is required");
  }

  /** Runs the command line and exits with its code. */
  public static void main(String[] args) {
    widenCommonPool();
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    int code = run(args, out, err);
    out.flush();
    err.flush();
    System.exit(code);
  }

  /**
   * On fewer than three CPUs the JDK's common pool has a single thread, and CompletableFuture then runs
   * every async stage without an executor on a thread of its own, started for that one task. The JDK's
   * HTTP client, fabric8's transport here, hands each response over that way: a thread started per API
   * request. Two common-pool threads make those stages run on pooled threads instead. Must run before
   * anything touches CompletableFuture; an explicit setting is left alone.
   */
  static void widenCommonPool() {
    String property = "java.util.concurrent.ForkJoinPool.common.parallelism";
    if (System.getProperty(property) == null && Runtime.getRuntime().availableProcessors() < 3) {
      System.setProperty(property, "2");
    }
  }

  /**
   * Runs the command line with the given streams.
   *
   * @return the exit code
   */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    boolean debug = Arrays.asList(args).contains("--debug");
    CommandLine cli = commandLine();
    cli.setOut(out);
    cli.setErr(err);
    cli.setParameterExceptionHandler(
        (e, a) -> {
          err.println("vgpu: " + e.getMessage() + " (see '" + e.getCommandLine().getCommandSpec().qualifiedName() + " --help')");
          return EXIT_BAD_INPUT;
        });
    cli.setExecutionExceptionHandler(
        (e, c, parsed) -> {
          boolean input = e instanceof InputException;
          boolean known = input || e instanceof UnavailableException;
          err.println("vgpu: " + (known ? e.getMessage() : "internal error: " + e + (debug ? "" : " (run with --debug for details)")));
          if (debug) {
            e.printStackTrace(err);
          } else {
            LOG.debug("stack trace of the error above", e);
          }
          return input ? EXIT_BAD_INPUT : EXIT_INTERNAL;
        });
    return cli.execute(args);
  }

  /** The command tree, with the subcommands other modules contribute. */
  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new Vgpu());
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    for (SubcommandProvider provider : ServiceLoader.load(SubcommandProvider.class, Vgpu.class.getClassLoader())) {
      cli.addSubcommand(provider.name(), provider.command());
    }
    return cli;
  }

  /** The version from the jar manifest, or {@code dev} when run from classes. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = Vgpu.class.getPackage().getImplementationVersion();
      return new String[] {"vgpu " + (version == null ? "dev" : version)};
    }
  }
}
