package io.vgpu.examples.throughput;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.LabHome;
import io.vgpu.examples.lab.LabWorkspace;
import io.vgpu.examples.lab.apiserver.ApiServerStandIn;
import io.vgpu.examples.lab.components.ComponentProcess;
import io.vgpu.examples.lab.components.JavaCommand;
import io.vgpu.examples.lab.components.ReferenceDeployment;
import io.vgpu.examples.lab.components.SchedulerLaunch;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerConfig;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerStandIn;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ExecutionException;
import java.util.function.IntFunction;
import tools.jackson.databind.JsonNode;

/**
 * One run of the benchmark at one cluster size: the API server stand-in with the nodes (and the pods
 * already running), the reference deployment's {@code vgpu scheduler} as its own JVM over HTTPS, the
 * lab's kube-scheduler with its binding cycle beside its scheduling cycle, and the allocating kubelet;
 * a warm-up burst, then the measured burst; then the same burst through the engine in this JVM.
 */
final class ThroughputRun {
  /** The placement policies a device config may name (the engine's built-in ones). */
  private static final Set<String> POLICIES = Set.of("fgd", "vgpu", "bestfit", "random");
  private static final int CREATORS = 4;

  /**
   * What to run.
   *
   * @param nodes GPU nodes
   * @param pods the measured burst's pods
   * @param running pods running before the scheduler starts
   * @param warmup pods of the warm-up burst (JIT, connections), not measured
   * @param steadyPods pods of the steady-state burst after the measured one (0: none); the warm-up and
   *     the measured burst before it are its warm-up, so it must not exceed them
   * @param bindsInFlight kube-scheduler's binds in flight at most
   * @param kubeletThreads how many nodes the kubelet allocates on at once
   * @param standInsNice how much lower this process's CPU priority is made once the scheduler started (0: not)
   * @param seed the seed of the pods' shares
   * @param timeout how long the burst may take
   * @param schedulerJavaOptions the scheduler JVM's options
   * @param schedulerArgs flags for the scheduler after those of the chart
   * @param profile where to write a Flight Recorder recording of the scheduler during the measured burst, if anywhere
   * @param standInsPodsBefore pods this JVM's stand-ins ran before this run (a rehearsal, earlier sizes): reported
   * @param schedulerJava the java program the scheduler runs on, if not this JVM's
   * @param schedulerAotCache whether the scheduler starts with an ahead-of-time cache that its warm-up
   *     alone trained just before ({@link SchedulerAotCache}; JDK 25 or later)
   */
  record Settings(
      int nodes,
      int pods,
      int running,
      int warmup,
      int steadyPods,
      int bindsInFlight,
      int kubeletThreads,
      int standInsNice,
      long seed,
      Duration timeout,
      List<String> schedulerJavaOptions,
      List<String> schedulerArgs,
      Optional<Path> profile,
      int standInsPodsBefore,
      Optional<Path> schedulerJava,
      boolean schedulerAotCache) {}

  private final LabHome home;
  private final Settings settings;
  private final PrintWriter progress;

  ThroughputRun(LabHome home, Settings settings, PrintWriter progress) {
    this.home = home;
    this.settings = settings;
    this.progress = progress;
  }

  /** Runs the benchmark in {@code workspace}. */
  ThroughputResult run(LabWorkspace workspace) {
    long setupStart = System.nanoTime();
    ReferenceDeployment deployment = ReferenceDeployment.read(home.deployDirectory());
    Path deviceConfigFile = writeDeviceConfig(deployment, workspace);
    DeviceConfig config = new DeviceConfigReader(POLICIES).readFile(deviceConfigFile);
    KubeSchedulerConfig kubeSchedulerConfig = KubeSchedulerConfig.of(deployment.schedulerConfiguration());
    SyntheticCluster cluster = new SyntheticCluster(config, deployment.devicePlugin().nodeSelector(), kubeSchedulerConfig.schedulerNames().iterator().next());
    List<String> nodeOrder = new ArrayList<>();
    for (int i = 0; i < settings.nodes(); i++) {
      nodeOrder.add(SyntheticCluster.nodeName(i));
    }
    int burstEnd = settings.running() + settings.warmup() + settings.pods();
    List<SyntheticCluster.Share> shares = SyntheticCluster.shares(burstEnd + settings.steadyPods(), settings.seed());
    List<Pod> warmup = pending(cluster, "warmup", shares.subList(settings.running(), settings.running() + settings.warmup()));
    List<Pod> burst = pending(cluster, "burst", shares.subList(settings.running() + settings.warmup(), burstEnd));
    List<Pod> steady = pending(cluster, "steady", shares.subList(burstEnd, shares.size()));

    BurstRecorder recorder = new BurstRecorder();
    InProcessEngine placer = new InProcessEngine(config, cluster, settings.nodes());
    List<PodGrant> runningGrants = new ArrayList<>();
    try (ApiServerStandIn api = ApiServerStandIn.start(); KubernetesClient client = api.client()) {
      Path kubeconfig = api.writeKubeconfig(workspace.file("kubeconfig"), deployment.schedulerUser());
      for (String ns : List.of("default", "kube-system", SyntheticCluster.NAMESPACE)) {
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns).addToLabels("kubernetes.io/metadata.name", ns).endMetadata().build()).create();
      }
      // Straight into the store, as objects that were there before the scheduler started: one HTTP
      // create per object would make set-up, not the scheduler, the cost of a large cluster.
      say("storing %d nodes", settings.nodes());
      List<Node> nodes = new ArrayList<>(settings.nodes());
      for (int i = 0; i < settings.nodes(); i++) {
        nodes.add(cluster.node(i));
      }
      api.load(nodes);
      if (settings.running() > 0) {
        say("placing %d running pods", settings.running());
        List<Pod> running = runningPods(placer, cluster, shares.subList(0, settings.running()), runningGrants);
        say("storing %d running pods", settings.running());
        api.load(running);
      }

      say("the bursts through the engine in-process");
      InProcessRun inProcess = inProcess(config, cluster, runningGrants, warmup, burst, steady);
      String steadySkipped = "";
      if (!steady.isEmpty() && inProcess.steadyPlaced() < steady.size()) {
        // A cluster too small for both bursts (the 10-node burst) has no steady state to measure.
        steadySkipped = settings.nodes() + " nodes hold " + inProcess.steadyPlaced() + " of the " + steady.size() + " steady-state pods after the measured burst";
        say("no steady-state burst: %s", steadySkipped);
        steady = List.of();
      }

      SchedulerLaunch launch = SchedulerLaunch.plan(deployment, workspace, deviceConfigFile, kubeconfig);
      // The scheduler pod's init container fills the caBundle of the chart's webhook configuration: it must exist.
      client.admissionRegistration().v1().mutatingWebhookConfigurations()
          .resource(PodJson.mapper().treeToValue(deployment.webhookConfiguration(), MutatingWebhookConfiguration.class)).create();
      launch.runCertificates(kubeconfig, workspace.file("logs/certificates.log"));
      Optional<Path> archives = Optional.of(home.root().resolve("target/lab-cds"));
      JavaCommand java = settings.schedulerJava().map(j -> JavaCommand.on(j.toString(), archives)).orElseGet(() -> new JavaCommand(archives));
      List<String> schedulerArgs = concat(launch.args(), settings.schedulerArgs());
      List<String> jvmOptions = settings.schedulerJavaOptions();
      Optional<Double> aotTrainingSeconds = Optional.empty();
      if (settings.schedulerAotCache()) {
        say("the scheduler's AOT cache: its warm-up alone, as training");
        SchedulerAotCache cache = SchedulerAotCache.train(java, jvmOptions, schedulerArgs, launch.env(), workspace.file("scheduler.aot"), workspace.file("logs/aot-training.log"));
        aotTrainingSeconds = Optional.of(round(cache.trainingSeconds(), 2));
        jvmOptions = concat(jvmOptions, List.of(cache.option()));
      }
      JavaCommand.Launch command = java.command("info", jvmOptions, schedulerArgs);
      ComponentProcess scheduler = new ComponentProcess("scheduler", command.command(), launch.env(), workspace.file("logs/scheduler.log"));
      Thread killer = new Thread(scheduler::kill, "throughput-bench-cleanup");
      Runtime.getRuntime().addShutdownHook(killer);
      say("starting the scheduler");
      scheduler.start();
      if (settings.standInsNice() > 0) {
        // After the scheduler's start, so that it keeps the normal priority.
        say("the stand-ins' CPU priority lowered by %d", settings.standInsNice());
        StandInPriority.lower(settings.standInsNice());
      }
      try (AllocatingKubelet kubelet = new AllocatingKubelet(client, config, settings.kubeletThreads(), recorder::allocated)) {
        URI prefix = kubeSchedulerConfig.extender().urlPrefix();
        int extenderPort = launch.labPort(prefix.getPort() < 0 ? 443 : prefix.getPort(), "the extender's urlPrefix " + prefix);
        try (KubeSchedulerStandIn kubeScheduler =
            new KubeSchedulerStandIn(client, kubeSchedulerConfig, URI.create("https://127.0.0.1:" + extenderPort + prefix.getRawPath()), launch.kubeSchedulerTls(kubeSchedulerConfig),
                () -> nodeOrder, launch.podName(), KubeSchedulerStandIn.BindingCycle.parallel(settings.bindsInFlight(), recorder))) {
          // The scheduler leads once it sees kube-scheduler's Lease held by its own pod.
          awaitReady(scheduler, launch.metricsPort());
          double setupSeconds = (System.nanoTime() - setupStart) / 1e9;
          if (!warmup.isEmpty()) {
            say("warm-up: %d pods", warmup.size());
            burst(client, warmup, recorder, scheduler, settings.timeout());
          }
          ProcessMeter meter = new ProcessMeter(scheduler.pid());
          SchedulerFilterHistogram histogram = new SchedulerFilterHistogram(launch.metricsPort());
          ProcessMeter standIns = new ProcessMeter(ProcessHandle.current().pid());
          double loadBefore = loadAverage();
          say("burst: %d pods onto %d nodes", burst.size(), settings.nodes());
          settings.profile().ifPresent(meter::startRecording);
          BurstMeasure measured = measure(client, burst, recorder, scheduler, meter, standIns, histogram);
          if (settings.profile().isPresent()) {
            meter.stopRecording();
          }
          Optional<BurstMeasure> steadyMeasure = Optional.empty();
          if (!steady.isEmpty()) {
            say("steady state: %d pods after %d warm-up pods", steady.size(), warmup.size() + burst.size());
            steadyMeasure = Optional.of(measure(client, steady, recorder, scheduler, meter, standIns, histogram));
          }
          double loadAfter = loadAverage();
          double heap = meter.heapAfterFullGcMiB();
          double resident = meter.residentMiB();
          Set<PodRef> refs = refs(burst);
          List<Pod> placedPods = client.pods().inNamespace(SyntheticCluster.NAMESPACE).list().getItems();
          List<Node> registered = client.nodes().list().getItems();
          PlacementAudit audit = PlacementAudit.of(refs, placedPods, registered);
          PlacementAudit steadyAudit = PlacementAudit.of(refs(steady), placedPods, registered);
          return new ThroughputResult(
              settings.nodes(),
              burst.size(),
              settings.running(),
              settings.bindsInFlight(),
              round(measured.seconds(), 3),
              round(burst.size() / measured.seconds(), 1),
              round(measured.schedulerCpuMs() / burst.size(), 3),
              round(measured.schedulerJitCpuMs() / burst.size(), 3),
              round(measured.standInCpuMs() / burst.size(), 3),
              round(measured.standInJitCpuMs() / burst.size(), 3),
              round(BurstRecorder.percentile(measured.filters(), 50), 2),
              round(BurstRecorder.percentile(measured.filters(), 99), 2),
              round(BurstRecorder.percentile(measured.binds(), 50), 2),
              round(BurstRecorder.percentile(measured.binds(), 99), 2),
              round(heap, 1),
              round(resident, 1),
              round(inProcess.podsPerSecond(), 1),
              audit,
              measured.successfulBinds(),
              measured.bindErrors(),
              measured.filterMisses(),
              round(setupSeconds, 2),
              List.of(round(loadBefore, 2), round(loadAfter, 2)),
              measured.inSchedulerFilterP50Ms(),
              measured.inSchedulerFilterP99Ms(),
              steadyMeasure.map(m -> ThroughputResult.Steady.of(m, warmup.size() + burst.size(), steadyAudit)),
              steadySkipped,
              settings.standInsPodsBefore(),
              java.javaVersion().orElse(""),
              aotTrainingSeconds);
        }
      } finally {
        scheduler.stop();
        command.publishArchive();
        Runtime.getRuntime().removeShutdownHook(killer);
      }
    }
  }

  private static List<String> concat(List<String> first, List<String> then) {
    List<String> all = new ArrayList<>(first);
    all.addAll(then);
    return all;
  }

  private void say(String format, Object... args) {
    progress.printf(Locale.ROOT, "throughput-bench: " + format + "%n", args);
    progress.flush();
  }

  /** The reference deployment's device configuration, written where the scheduler reads it. */
  private static Path writeDeviceConfig(ReferenceDeployment deployment, LabWorkspace workspace) {
    return workspace.write("config/device-config.yaml", deployment.deviceConfiguration());
  }

  private static List<Pod> pending(SyntheticCluster cluster, String prefix, List<SyntheticCluster.Share> shares) {
    List<Pod> out = new ArrayList<>(shares.size());
    for (int i = 0; i < shares.size(); i++) {
      Pod pod = cluster.pending(String.format(Locale.ROOT, "%s-%05d", prefix, i), shares.get(i));
      pod.getMetadata().getLabels().put(AllocatingKubelet.BURST_LABEL, prefix);
      out.add(pod);
    }
    return out;
  }

  /** Nodes a running pod is placed among: enough to fill the cluster evenly, few enough that filling it costs no scan per pod. */
  private static final int RUNNING_WINDOW = 8;

  /**
   * Pods placed by {@code placer} (an engine with the scheduler's configuration), as they run once their
   * handshake is done; their grants are added to {@code grants}. Pod {@code i} is placed among the
   * {@value #RUNNING_WINDOW} nodes from node {@code i mod nodes} on, or anywhere when those are full.
   */
  private List<Pod> runningPods(InProcessEngine placer, SyntheticCluster cluster, List<SyntheticCluster.Share> shares, List<PodGrant> grants) {
    Instant started = Instant.now().minus(Duration.ofHours(1));
    List<String> names = new ArrayList<>(settings.nodes());
    for (int i = 0; i < settings.nodes(); i++) {
      names.add(SyntheticCluster.nodeName(i));
    }
    List<Pod> out = new ArrayList<>(shares.size());
    for (int i = 0; i < shares.size(); i++) {
      String name = String.format(Locale.ROOT, "running-%05d", i);
      Pod pending = cluster.pending(name, shares.get(i));
      Optional<PodGrant> grant = placer.schedule(pending, window(names, i));
      if (grant.isEmpty()) {
        grant = placer.schedule(pending);
      }
      if (grant.isEmpty()) {
        throw new UnavailableException(settings.nodes() + " nodes cannot hold " + shares.size() + " running pods (pod " + i + " fits nowhere); give fewer --running");
      }
      grants.add(grant.get());
      out.add(cluster.running(name, shares.get(i), grant.get(), started));
    }
    return out;
  }

  private static List<String> window(List<String> names, int i) {
    int from = i % names.size();
    int to = Math.min(names.size(), from + RUNNING_WINDOW);
    return names.subList(from, to);
  }

  /**
   * The bursts through an engine of this JVM from the same start (running pods, warm-up): the measured
   * burst's pods per second, and how many steady-state pods still fit after it.
   */
  private InProcessRun inProcess(DeviceConfig config, SyntheticCluster cluster, List<PodGrant> running, List<Pod> warmup, List<Pod> burst, List<Pod> steady) {
    InProcessEngine engine = new InProcessEngine(config, cluster, settings.nodes());
    running.forEach(engine::hold);
    engine.scheduleAll(warmup);
    long start = System.nanoTime();
    engine.scheduleAll(burst);
    double podsPerSecond = burst.size() / ((System.nanoTime() - start) / 1e9);
    return new InProcessRun(podsPerSecond, engine.scheduleAll(steady));
  }

  /** What the in-process engine made of the bursts. */
  private record InProcessRun(double podsPerSecond, int steadyPlaced) {}

  /**
   * One measured burst: its pods created and allocated, with the scheduler's and this process's CPU
   * over it and the extender calls kube-scheduler timed during it.
   */
  private BurstMeasure measure(
      KubernetesClient client, List<Pod> pods, BurstRecorder recorder, ComponentProcess scheduler, ProcessMeter meter, ProcessMeter standIns, SchedulerFilterHistogram histogram) {
    recorder.resetTimings();
    var histogramBefore = histogram.read();
    double cpuBefore = meter.cpuMillis();
    Map<Long, Long> jitBefore = meter.compilerTicks();
    double standInsBefore = standIns.cpuMillis();
    Map<Long, Long> standInJitBefore = standIns.compilerTicks();
    double seconds = burst(client, pods, recorder, scheduler, settings.timeout());
    double cpu = meter.cpuMillis() - cpuBefore;
    double jit = meter.compilerCpuMillisBetween(jitBefore, meter.compilerTicks());
    double standInCpu = standIns.cpuMillis() - standInsBefore;
    double standInJit = standIns.compilerCpuMillisBetween(standInJitBefore, standIns.compilerTicks());
    var histogramAfter = histogram.read();
    return new BurstMeasure(seconds, cpu, jit, standInCpu, standInJit, recorder.filterMillis(), recorder.bindMillis(), recorder.successfulBinds(), recorder.bindErrors(), recorder.filterMisses(),
        SchedulerFilterHistogram.percentileMillis(histogramBefore, histogramAfter, 50), SchedulerFilterHistogram.percentileMillis(histogramBefore, histogramAfter, 99));
  }

  /** Creates the pods and waits until the kubelet allocated every one; the seconds that took. */
  private static double burst(KubernetesClient client, List<Pod> pods, BurstRecorder recorder, ComponentProcess scheduler, Duration timeout) {
    Set<PodRef> refs = refs(pods);
    long start = System.nanoTime();
    createAll(client, pods.size(), pods::get);
    long deadline = start + timeout.toNanos();
    while (recorder.allocatedOf(refs) < refs.size()) {
      if (!scheduler.alive()) {
        throw scheduler.failure("the scheduler exited during the burst");
      }
      if (System.nanoTime() > deadline) {
        break;
      }
      sleep(5);
    }
    return (System.nanoTime() - start) / 1e9;
  }

  private static Set<PodRef> refs(List<Pod> pods) {
    Set<PodRef> refs = new LinkedHashSet<>();
    pods.forEach(p -> refs.add(PodRefs.of(p)));
    return refs;
  }

  /** Creates {@code count} objects through the API server, a few requests at a time. */
  private static void createAll(KubernetesClient client, int count, IntFunction<? extends HasMetadata> object) {
    ExecutorService creators = Executors.newFixedThreadPool(CREATORS);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int c = 0; c < CREATORS; c++) {
        int first = c;
        done.add(creators.submit(() -> {
          for (int i = first; i < count; i += CREATORS) {
            client.resource(object.apply(i)).create();
          }
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } catch (ExecutionException e) {
      throw new UnavailableException("the API server refused an object: " + e.getCause().getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnavailableException("interrupted while creating objects");
    } finally {
      creators.shutdownNow();
    }
  }

  private static void awaitReady(ComponentProcess scheduler, int metricsPort) {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    URI readyz = URI.create("http://127.0.0.1:" + metricsPort + "/readyz");
    scheduler.awaitReady(() -> {
      try {
        return http.send(HttpRequest.newBuilder(readyz).timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
      } catch (IOException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }, "ready (/readyz: ledger synced and leading)", Duration.ofMinutes(3));
  }

  private static double loadAverage() {
    try {
      return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnavailableException("interrupted");
    }
  }

  static double round(double value, int digits) {
    double scale = Math.pow(10, digits);
    return Math.round(value * scale) / scale;
  }
}
