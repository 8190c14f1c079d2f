package io.vgpu.examples.throughput;

import io.vgpu.examples.lab.LabHome;
import io.vgpu.examples.lab.LabWorkspace;
import io.vgpu.examples.lab.components.JavaCommand;
import io.vgpu.k8s.cli.GoDuration;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code vgpu throughput-bench}: a burst of GPU pods through the real {@code vgpu scheduler} at cluster
 * scale, end to end (kube-scheduler's extender calls over HTTPS, the API server, the node locks and the
 * kubelet's handshake), with the scheduler's own CPU and heap, beside the same burst through the engine
 * in-process.
 */
@Command(
    name = ThroughputBenchCommand.NAME,
    mixinStandardHelpOptions = true,
    description = "Measure how fast the real vgpu scheduler places a burst of pods at cluster scale (stand-ins for the API server, kube-scheduler and kubelets).")
public final class ThroughputBenchCommand implements Callable<Integer> {
  /** The subcommand's name. */
  public static final String NAME = "throughput-bench";

  @Option(names = "--nodes", split = ",", paramLabel = "N[,N...]", defaultValue = "1000",
      description = "GPU nodes of 8 cards; several sizes run one after the other (default ${DEFAULT-VALUE}).")
  List<Integer> nodes;

  @Option(names = "--pods", paramLabel = "P", defaultValue = "2000", description = "Pods in the measured burst (default ${DEFAULT-VALUE}).")
  int pods;

  @Option(names = "--running", paramLabel = "R", defaultValue = "0",
      description = "Pods already running (bound, allocated, about 5 KB each) before the scheduler starts (default ${DEFAULT-VALUE}).")
  int running;

  @Option(names = "--warmup", paramLabel = "W", description = "Pods of an unmeasured burst first (default: 200, at most one per node).")
  @Nullable Integer warmup;

  @Option(names = "--steady-pods", paramLabel = "S",
      description = "Pods of a second burst measured after the first, as a scheduler that has run a while meets them; at most the warm-up and"
          + " the first burst together, 0 for none (default: as many as --pods; none when the cluster cannot hold them).")
  @Nullable Integer steadyPods;

  @Option(names = "--binds-in-flight", paramLabel = "K", defaultValue = "16",
      description = "Binds kube-scheduler keeps in flight beside its scheduling cycle (default ${DEFAULT-VALUE}).")
  int bindsInFlight;

  @Option(names = "--kubelet-threads", paramLabel = "T", defaultValue = "8", description = "Nodes the kubelet stand-in allocates on at once (default ${DEFAULT-VALUE}).")
  int kubeletThreads;

  @Option(names = "--stand-ins-nice", paramLabel = "N", defaultValue = "0",
      description = "Once the scheduler is started, set this process's nice value (the stand-ins': API server, kube-scheduler, kubelets) to N"
          + " (1-19), so that on a small machine the scheduler's latencies are its own and not its wait for a core behind the stand-ins, as when"
          + " they run on other machines (default ${DEFAULT-VALUE}: equal priority).")
  int standInsNice;

  @Option(names = "--rehearsal-pods", paramLabel = "R",
      description = "Before the first measured run, R pods through the stand-ins on a small cluster of their own with a scheduler of its own,"
          + " then a second round of at most " + SECOND_ROUND + " pods, not measured: the stand-ins (this JVM) have then compiled their part, as an API server and kubelets that have been running"
          + " have; the measured scheduler starts cold all the same. 0: none (default: " + DEFAULT_REHEARSAL + " when the first size's warm-up"
          + " is under " + DEFAULT_WARMUP + ", else none).")
  @Nullable Integer rehearsalPods;

  /** The warm-up's pods when not given (at most one per node), and what the stand-ins should have run before a measured burst. */
  private static final int DEFAULT_WARMUP = 200;

  @Option(names = "--seed", defaultValue = "42", description = "Seed of the pods' GPU shares (default ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--timeout", defaultValue = "5m", converter = GoDuration.class, description = "How long one burst may take (default ${DEFAULT-VALUE}).")
  Duration timeout;

  @Option(names = "--scheduler-java-options", paramLabel = "OPTIONS",
      description = "The scheduler JVM's options, space-separated (default: those vgpu's image starts it with, read from images/vgpu/Dockerfile), e.g. -XX:+UseSerialGC -XX:StartFlightRecording=filename=s.jfr.")
  @Nullable String schedulerJavaOptions;

  @Option(names = "--scheduler-java", paramLabel = "JAVA",
      description = "The java program the scheduler runs on, e.g. /usr/lib/jvm/temurin-25-jdk-amd64/bin/java (default: the one this command runs on);"
          + " the stand-ins stay on this one.")
  @Nullable Path schedulerJava;

  @Option(names = "--scheduler-aot-cache",
      description = "Start the measured scheduler with an ahead-of-time cache (-XX:AOTCache) that its warm-up alone trained just before (vgpu scheduler --warm-up-only"
          + " under -XX:AOTCacheOutput, with the scheduler's own JVM options and flags): its classes loaded and linked and its methods' profiles ready at start."
          + " Needs JDK 25 or later for the scheduler (--scheduler-java). The default where the image's options name a cache (its Dockerfile's ENTRYPOINT) and the scheduler's Java is 25 or later.")
  boolean schedulerAotCache;

  @Option(names = "--scheduler-args", paramLabel = "FLAGS",
      description = "Flags for the scheduler after the chart's, space-separated, e.g. --warm-up-rounds=0 (default: none).")
  @Nullable String schedulerArgs;

  @Option(names = "--profile", paramLabel = "FILE",
      description = "Record the scheduler with Java Flight Recorder during the measured burst (one size only), e.g. s.jfr; read it with jfr print or JDK Mission Control.")
  @Nullable Path profile;

  @Option(names = "--output", defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  Output output;

  @Option(names = "--plot", paramLabel = "FILE", description = "Also write an SVG of pods per second against node count.")
  @Nullable Path plot;

  @Option(names = "--keep", paramLabel = "DIR", description = "Keep the scheduler's log, its configuration and the certificates in DIR (in DIR/N-nodes and DIR/rehearsal where there are several runs).")
  @Nullable Path keep;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** Output formats. */
  enum Output {
    text,
    json
  }

  private static final String DOCKERFILE = "images/vgpu/Dockerfile";

  @Override
  public Integer call() {
    validate();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter progress = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    LabHome home = LabHome.locate();
    List<ThroughputResult> results = new ArrayList<>();
    boolean aotCache = aotCache(home, progress);
    int rehearsal = rehearsal(rehearsalPods, warmupFor(nodes.get(0)));
    int standInsPodsBefore = rehearsal > 0 ? rehearse(home, progress, rehearsal) : 0;
    for (int n : nodes) {
      int w = warmupFor(n);
      int steady = steadyPods != null ? steadyPods : pods;
      if (steady > w + pods) {
        throw new CommandLine.ParameterException(spec.commandLine(),
            "--steady-pods " + steady + " is more than the " + (w + pods) + " pods before it (--warmup " + w + " and --pods " + pods + "): its warm-up must be at least as large");
      }
      ThroughputRun.Settings settings =
          new ThroughputRun.Settings(n, pods, running, w, steady, bindsInFlight, kubeletThreads, standInsNice, seed, timeout, javaOptions(home), schedulerArgs(),
              Optional.ofNullable(profile), standInsPodsBefore, Optional.ofNullable(schedulerJava), aotCache);
      try (LabWorkspace workspace = keep == null ? LabWorkspace.temporary() : LabWorkspace.kept(nodes.size() == 1 && rehearsal == 0 ? keep : keep.resolve(n + "-nodes"))) {
        results.add(new ThroughputRun(home, settings, progress).run(workspace));
      }
      standInsPodsBefore += w + pods + steady;
    }
    if (output == Output.json) {
      out.print(ThroughputReport.json(results));
    } else {
      out.print(ThroughputReport.text(results));
    }
    out.flush();
    if (plot != null) {
      try {
        Files.writeString(plot, ThroughputPlot.svg(results));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write --plot " + plot, e);
      }
    }
    return results.stream().allMatch(ThroughputBenchCommand::sound) ? 0 : 1;
  }

  /**
   * The stand-ins' rehearsal where the first warm-up is short: at 10 nodes their CPU per pod in the
   * measured burst went from 63-73 ms after 200 rehearsed pods to 39-43 ms after 600-1,200 (run N),
   * for a few seconds more of the benchmark's time.
   */
  private static final int DEFAULT_REHEARSAL = 1000;

  /** Cards a rehearsal node holds pods on: 8 cards, and shares about 2.5 pods a card deep. */
  private static final int REHEARSAL_PODS_PER_NODE = 20;

  /** The pods to rehearse: those asked for, else enough for a first warm-up shorter than the default's. */
  static int rehearsal(@Nullable Integer asked, int firstWarmup) {
    return asked != null ? asked : firstWarmup < DEFAULT_WARMUP ? DEFAULT_REHEARSAL : 0;
  }

  /** The warm-up's pods for a cluster of {@code nodes}: {@code --warmup}, else the default, at most one per node. */
  private int warmupFor(int nodes) {
    return warmup != null ? warmup : Math.min(DEFAULT_WARMUP, nodes);
  }

  /**
   * The rehearsal: {@code rehearsalPods} pods through the stand-ins and a scheduler of its own on a
   * cluster just large enough, then a second, short round of at most {@value #SECOND_ROUND} pods on a
   * cluster of its own, both unmeasured and thrown away. Returns the pods they ran (the stand-ins'
   * warm-up, reported with each result). Only where the measured run's own warm-up is short: at 5,000
   * nodes the stand-ins measured worse after a rehearsal on a small cluster than after none (their
   * compiled code is shaped by what it ran first), and the run's 200-pod warm-up warms them there.
   *
   * <p>Two rounds, because the end of a round and the next one's set-up (its stand-ins closed, new
   * ones started, a new cluster stored) deoptimize about 200 of the stand-ins' compiled methods, which
   * the next burst then compiles again: the short round takes that compiling, and its own end
   * deoptimizes about 25, the close paths being in the profiles by then (run Y in vgpu-bench's README).
   */
  private int rehearse(LabHome home, PrintWriter progress, int rehearsalPods) {
    int first = rehearseRound(home, progress, rehearsalPods, "rehearsal");
    return first + rehearseRound(home, progress, Math.min(rehearsalPods, SECOND_ROUND), "rehearsal-2");
  }

  /** The pods of the rehearsal's second round, onto {@value #REHEARSAL_MIN_NODES} nodes. */
  private static final int SECOND_ROUND = 200;

  /** The fewest nodes a rehearsal round runs on. */
  private static final int REHEARSAL_MIN_NODES = 10;

  /** One round of the rehearsal, kept in {@code keepAs} under {@code --keep}; the pods it ran. */
  private int rehearseRound(LabHome home, PrintWriter progress, int rehearsalPods, String keepAs) {
    int n = Math.max(REHEARSAL_MIN_NODES, (rehearsalPods + REHEARSAL_PODS_PER_NODE - 1) / REHEARSAL_PODS_PER_NODE);
    int w = Math.min(DEFAULT_WARMUP, n);
    progress.printf(Locale.ROOT, "throughput-bench: %s: %d pods onto %d nodes through the stand-ins, not measured%n", keepAs, rehearsalPods, n);
    ThroughputRun.Settings settings =
        new ThroughputRun.Settings(n, rehearsalPods, 0, w, 0, bindsInFlight, kubeletThreads, 0, seed, timeout, javaOptions(home), schedulerArgs(), Optional.empty(), 0, Optional.ofNullable(schedulerJava), false);
    try (LabWorkspace workspace = keep == null ? LabWorkspace.temporary() : LabWorkspace.kept(keep.resolve(keepAs))) {
      ThroughputResult rehearsal = new ThroughputRun(home, settings, progress).run(workspace);
      if (!sound(rehearsal)) {
        progress.printf(Locale.ROOT, "throughput-bench: the %s did not place and bind every pod once (%d placed, %d binds, %d lost): the measured runs say how theirs went%n",
            keepAs, rehearsal.audit().placed(), rehearsal.successfulBinds(), rehearsal.audit().lostCount());
      }
    }
    return w + rehearsalPods;
  }

  private List<String> schedulerArgs() {
    return schedulerArgs == null || schedulerArgs.isBlank() ? List.of() : List.of(schedulerArgs.trim().split("\\s+"));
  }

  /** Every pod of both bursts placed and bound once, no card over-committed. */
  static boolean sound(ThroughputResult r) {
    boolean steadySound = r.steady().map(s -> s.audit().lostCount() == 0 && s.successfulBinds() == s.pods()).orElse(true);
    return r.audit().lostCount() == 0 && r.audit().overbookedCount() == 0 && r.successfulBinds() == r.pods() && steadySound;
  }

  private void validate() {
    for (int n : nodes) {
      positive("--nodes", n);
    }
    positive("--pods", pods);
    positive("--binds-in-flight", bindsInFlight);
    positive("--kubelet-threads", kubeletThreads);
    if (running < 0) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--running " + running + " must not be negative");
    }
    if (profile != null && nodes.size() > 1) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--profile records one run: give one --nodes size");
    }
    if (standInsNice < 0 || standInsNice > 19) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--stand-ins-nice " + standInsNice + " must be from 0 to 19");
    }
    if (steadyPods != null && steadyPods < 0) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--steady-pods " + steadyPods + " must not be negative");
    }
    if (schedulerJava != null && !Files.isExecutable(schedulerJava)) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--scheduler-java " + schedulerJava + " is not an executable file");
    }
    if (schedulerAotCache && !SchedulerAotCache.supports(schedulerJavaVersion())) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--scheduler-aot-cache needs JDK 25 or later for the scheduler, and " + (schedulerJava == null ? "this Java" : "--scheduler-java " + schedulerJava) + " is " + schedulerJavaVersion());
    }
    if (rehearsalPods != null && rehearsalPods < 0) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--rehearsal-pods " + rehearsalPods + " must not be negative");
    }
    if (warmup != null && warmup < 0) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--warmup " + warmup + " must not be negative");
    }
  }

  private void positive(String option, int value) {
    if (value < 1) {
      throw new CommandLine.ParameterException(spec.commandLine(), option + " " + value + " must be at least 1");
    }
  }

  private String schedulerJavaVersion() {
    return schedulerJava == null ? System.getProperty("java.version") : JavaCommand.on(schedulerJava.toString(), Optional.empty()).javaVersion().orElse("unknown");
  }

  /**
   * Whether the measured scheduler starts with an AOT cache: when asked, or as the image starts it
   * where its Java can (the image's cache itself is a file inside the image: one is trained here).
   */
  private boolean aotCache(LabHome home, PrintWriter progress) {
    if (schedulerAotCache) {
      return true;
    }
    if (schedulerJavaOptions != null || !ImageJavaOptions.namesAotCache(ImageJavaOptions.read(home.root().resolve(DOCKERFILE)))) {
      return false;
    }
    if (SchedulerAotCache.supports(schedulerJavaVersion())) {
      return true;
    }
    progress.printf(Locale.ROOT, "throughput-bench: the image starts the scheduler on JDK 25 with an AOT cache; this scheduler runs on %s without one (--scheduler-java names a JDK 25)%n",
        schedulerJavaVersion());
    return false;
  }

  private List<String> javaOptions(LabHome home) {
    if (schedulerJavaOptions == null) {
      // The image's AOT cache is a file inside the image: aotCache() trains one here instead.
      return ImageJavaOptions.withoutAotCache(ImageJavaOptions.read(home.root().resolve(DOCKERFILE)));
    }
    return schedulerJavaOptions.isBlank() ? List.of() : List.of(schedulerJavaOptions.trim().split("\\s+"));
  }
}
