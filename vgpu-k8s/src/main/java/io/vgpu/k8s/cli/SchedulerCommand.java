package io.vgpu.k8s.cli;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import io.vgpu.k8s.grant.GrantKeySecret;
import io.vgpu.k8s.scheduler.KaiWebhookServer;
import io.vgpu.k8s.scheduler.SchedulerOptions;
import io.vgpu.k8s.scheduler.SchedulerServer;
import io.vgpu.k8s.scheduler.WarmUpTraining;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.nvidia.HookLayout;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code vgpu scheduler}: the scheduler extender and admission webhook. Flags carry HAMi's names and
 * defaults so HAMi's Helm values work unchanged. With {@code --stack kai} it is vgpu's webhook under KAI
 * Scheduler alone ({@link KaiWebhookServer}); the extender's flags are then refused, one line each.
 */
@Command(
    name = "scheduler",
    mixinStandardHelpOptions = true,
    description = "Serve the kube-scheduler extender (/filter, /bind), the admission webhook (/webhook), and metrics with the health probes (/metrics, /healthz, /readyz)."
        + " With --stack kai: only the webhook for the pods KAI Scheduler shares, and the health probes.")
public final class SchedulerCommand implements Callable<Integer> {
  /** The flags of the extender, the ledger and leadership: meaningless, so refused, with {@code --stack kai}. */
  static final List<String> HAMI_STACK_ONLY =
      List.of(
          "--extender-bind-address", "--client-ca-file", "--scheduler-name", "--node-scheduler-policy", "--gpu-scheduler-policy", "--device-config-file",
          "--node-lock-timeout", "--node-lock-retry-timeout", "--leader-elect", "--leader-elect-resource-name", "--leader-elect-resource-namespace",
          "--stale-reservation-timeout", "--node-label-selector", "--legacy-metrics", "--force-overwrite-default-scheduler", "--place-cpu-only-pods",
          "--grant-key-secret", "--sync-timeout", "--kai-dialect", "--kai-scheduler-name", "--gang-hold-timeout", "--warm-up-rounds",
          "--warm-up-only");

  @Spec
  @Nullable CommandSpec spec;

  @Option(
      names = "--stack",
      defaultValue = "hami",
      description = "hami: vgpu schedules (extender and webhook). kai: KAI Scheduler schedules and shares; serve only the webhook that gives the pods KAI shares vgpu's isolation (default ${DEFAULT-VALUE}).")
  String stack;

  @Option(names = "--hook-path", description = "With --stack kai: where the node agents install the interposer, <hook>/vgpu (default: HOOK_PATH, else /usr/local).")
  @Nullable Path hookPath;

  @Option(names = "--http_bind", defaultValue = "127.0.0.1:8080", description = "Webhook address, and the extender's unless --extender-bind-address is given (default ${DEFAULT-VALUE}).")
  String httpBind;

  @Option(names = "--extender-bind-address", defaultValue = "", description = "The extender's own address, e.g. 127.0.0.1:8443 when kube-scheduler runs in the same pod (default: --http_bind).")
  String extenderBind;

  @Option(names = "--client-ca-file", description = "CA bundle (PEM): /filter and /bind answer only clients presenting a certificate it signed (kube-scheduler's extender tlsConfig). Needs --cert_file.")
  @Nullable Path clientCaFile;

  @Option(names = "--webhook-client-ca-file", description = "CA bundle (PEM): /webhook answers only API servers presenting a certificate it signed. Needs --cert_file.")
  @Nullable Path webhookClientCaFile;

  @Option(names = "--cert_file", description = "TLS certificate (PEM); reloaded when it changes. Without it, plain HTTP.")
  @Nullable Path certFile;

  @Option(names = "--key_file", description = "TLS private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC).")
  @Nullable Path keyFile;

  @Option(names = "--metrics-bind-address", defaultValue = ":9395", description = "Metrics, /healthz and /readyz address (default ${DEFAULT-VALUE}).")
  String metricsBind;

  @Option(names = "--scheduler-name", defaultValue = "", description = "Scheduler name the webhook gives GPU pods (default hami-scheduler).")
  String schedulerName;

  @Option(names = "--node-scheduler-policy", defaultValue = "", description = "Default node policy: binpack or spread (default: the device config's, binpack).")
  String nodePolicy;

  @Option(names = "--gpu-scheduler-policy", defaultValue = "", description = "Default GPU policy: spread, binpack, mutex, a chain, or a placement policy such as fgd (default: the device config's, spread).")
  String gpuPolicy;

  @Option(names = "--device-config-file", description = "HAMi's device-config YAML (its nvidia section).")
  @Nullable Path deviceConfigFile;

  @Option(names = "--node-lock-timeout", defaultValue = "5m", converter = GoDuration.class, description = "Node lock expiry (default ${DEFAULT-VALUE}).")
  Duration nodeLockTimeout;

  @Option(names = "--node-lock-retry-timeout", defaultValue = "28s", converter = GoDuration.class, description = "How long a bind waits for a contended node lock before it fails and kube-scheduler retries the pod (default ${DEFAULT-VALUE}).")
  Duration nodeLockRetryTimeout;

  @Option(names = "--leader-elect", description = "Lead while kube-scheduler's Lease names this pod.")
  boolean leaderElect;

  @Option(names = "--leader-elect-resource-name", defaultValue = "", description = "kube-scheduler's Lease name.")
  String leaseName;

  @Option(names = "--leader-elect-resource-namespace", defaultValue = "", description = "kube-scheduler's Lease namespace.")
  String leaseNamespace;

  @Option(names = "--stale-reservation-timeout", defaultValue = "5m", converter = GoDuration.class, description = "Give back the reservation of a pod filtered but not bound within this time (default ${DEFAULT-VALUE}).")
  Duration staleReservationTimeout;

  @Option(names = "--node-label-selector", split = ",", description = "Register only nodes with these labels, e.g. gpu=on.")
  Map<String, String> nodeLabelSelector = new LinkedHashMap<>();

  @Option(names = "--legacy-metrics", description = "Also emit HAMi's pre-2.5 metric names.")
  boolean legacyMetrics;

  @Option(names = "--force-overwrite-default-scheduler", defaultValue = "true", arity = "0..1", description = "Hand GPU pods that name default-scheduler to this scheduler (default ${DEFAULT-VALUE}).")
  boolean forceOverwriteDefaultScheduler;

  @Option(
      names = "--place-cpu-only-pods",
      description =
          "Also place pods that ask for no GPU: the webhook hands them to this scheduler and the extender picks their node by the placement policy,"
              + " a node without vGPU cards first, else the card node where their CPU strands the least (default: kube-scheduler places them, as with HAMi).")
  boolean placeCpuOnlyPods;

  @Option(
      names = "--grant-key-secret",
      paramLabel = "NAMESPACE/NAME",
      description =
          "The Secret holding the key the scheduler signs each grant with (made at start when missing), which node agents check before serving a grant."
              + " Without it grants are not signed.")
  @Nullable String grantKeySecret;

  @Option(
      names = "--kai-dialect",
      description =
          "Schedule KAI Scheduler's pod dialect (pods naming --kai-scheduler-name, its queue label, gpu-fraction, gpu-memory, pod-group-name) with vgpu's engine:"
              + " the webhook hands them to this scheduler, the extender charges them to their Queue (scheduling.run.ai/v2) and holds gangs (PodGroup"
              + " scheduling.run.ai/v2alpha2) until they fit whole.")
  boolean kaiDialect;

  @Option(names = "--kai-scheduler-name", defaultValue = "kai-scheduler", description = "With --kai-dialect: the scheduler name KAI's pods carry (default ${DEFAULT-VALUE}).")
  String kaiSchedulerName;

  @Option(
      names = "--gang-hold-timeout",
      defaultValue = "60s",
      converter = GoDuration.class,
      description = "With --kai-dialect: how long a gang's reservation waits for its members' binds; those not bound by then give theirs back (default ${DEFAULT-VALUE}).")
  Duration gangHoldTimeout;

  @Option(names = "--kubeconfig", description = "Kubeconfig file; without it, the in-cluster configuration.")
  @Nullable Path kubeconfig;

  @Option(names = "--warm-up-rounds", defaultValue = "6000",
      description = "Rounds of the request path (over a private loopback listener) run on made-up pods before the extender listens, so that the first pods find it compiled; 0 for none (default ${DEFAULT-VALUE}, at most 20 s; at most 600 where the JVM compiles without C2, as with -XX:TieredStopAtLevel=1).")
  int warmUpRounds;

  @Option(names = "--warm-up-only",
      description = "Run the start-up warm-up alone and exit, reaching no cluster and serving nothing: the training run of a JVM that keeps what it learned,"
          + " e.g. java -XX:AOTCacheOutput=scheduler.aot ... scheduler --warm-up-only, then the scheduler with -XX:AOTCache=scheduler.aot (JDK 25).")
  boolean warmUpOnly;

  @Option(names = "--sync-timeout", defaultValue = "2m", converter = GoDuration.class, description = "How long to wait for the informer caches at start (default ${DEFAULT-VALUE}).")
  Duration syncTimeout;

  @Override
  public Integer call() throws Exception {
    if (!stack.equals("hami") && !stack.equals("kai")) {
      throw new InputException("--stack: '" + stack + "' is not one of hami, kai");
    }
    if (stack.equals("kai")) {
      return serveKai();
    }
    if (hookPath != null) {
      throw new InputException("--hook-path applies only with --stack kai (in the hami stack the node agent alone mounts the interposer)");
    }
    if (!kaiDialect && spec != null) {
      for (String flag : List.of("--kai-scheduler-name", "--gang-hold-timeout")) {
        if (spec.commandLine().getParseResult().hasMatchedOption(flag)) {
          throw new InputException(flag + " applies only with --kai-dialect");
        }
      }
    }
    DeviceConfig config = DeviceConfig.DEFAULT;
    if (deviceConfigFile != null) {
      config = new DeviceConfigReader(java.util.Set.of("fgd", "vgpu", "bestfit", "random")).readFile(deviceConfigFile);
    }
    SchedulerOptions options;
    try {
      options =
          new SchedulerOptions(
              httpBind,
              Optional.ofNullable(certFile),
              Optional.ofNullable(keyFile),
              extenderBind,
              Optional.ofNullable(clientCaFile),
              Optional.ofNullable(webhookClientCaFile),
              metricsBind,
              schedulerName,
              forceOverwriteDefaultScheduler,
              nodePolicy,
              gpuPolicy,
              Optional.ofNullable(deviceConfigFile),
              nodeLockTimeout,
              nodeLockRetryTimeout,
              leaderElect,
              leaseName,
              leaseNamespace,
              identity(),
              staleReservationTimeout,
              nodeLabelSelector,
              legacyMetrics,
              syncTimeout,
              placeCpuOnlyPods,
              Optional.ofNullable(grantKeySecret),
              kaiDialect ? Optional.of(kaiSchedulerName) : Optional.empty(),
              gangHoldTimeout,
              warmUpRounds);
    } catch (IllegalArgumentException e) {
      // A flag the options refuse (a negative count, a zero timeout): one line, as picocli's own.
      throw new InputException(e.getMessage());
    }
    if (warmUpOnly) {
      return warmUpOnly(options, config);
    }
    KubernetesClient client = ClusterConnection.connect(kubeconfig);
    try {
      if (grantKeySecret != null) {
        GrantKeySecret.parse(client, "--grant-key-secret", grantKeySecret);
      }
      try (SchedulerServer server = SchedulerServer.start(options, config, client, Clock.systemUTC())) {
        awaitShutdown();
      }
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    } catch (IOException e) {
      // A listener that cannot bind, a grant key that cannot be read or made: the message says which.
      throw new UnavailableException(e.getMessage());
    } catch (IllegalStateException e) {
      // Caches that did not fill in time (the API server, or with --kai-dialect KAI's CRDs): the message says which.
      throw new UnavailableException(e.getMessage());
    } finally {
      client.close();
    }
    return 0;
  }

  /** {@code --warm-up-only}: the warm-up's rounds, one line on what ran, and no cluster. */
  private int warmUpOnly(SchedulerOptions options, DeviceConfig config) {
    String ran;
    try {
      ran = WarmUpTraining.run(options, config);
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    } catch (IOException e) {
      throw new UnavailableException("--warm-up-only: " + e.getMessage());
    }
    if (spec != null) {
      spec.commandLine().getOut().println(ran);
    } else {
      System.out.println(ran);
    }
    return 0;
  }

  /** {@code --stack kai}: the webhook and the probes, nothing else. */
  private int serveKai() throws Exception {
    if (spec != null) {
      for (String flag : HAMI_STACK_ONLY) {
        if (spec.commandLine().getParseResult().hasMatchedOption(flag)) {
          throw new InputException(flag + " applies only with --stack hami: with --stack kai vgpu serves no extender");
        }
      }
    }
    String hook = hookPath != null ? hookPath.toString() : System.getenv().getOrDefault("HOOK_PATH", "/usr/local");
    HookLayout layout;
    try {
      layout = new HookLayout(hook);
    } catch (IllegalArgumentException e) {
      throw new InputException((hookPath != null ? "--hook-path: " : "HOOK_PATH: ") + e.getMessage());
    }
    SchedulerOptions options;
    try {
      options = SchedulerOptions.defaults().withBinds(httpBind, metricsBind);
      if (certFile != null || keyFile != null) {
        if (certFile == null || keyFile == null) {
          throw new IllegalArgumentException("--cert_file and --key_file must be given together");
        }
        options = options.withTls(certFile, keyFile);
      }
      options = options.withExtender("", Optional.empty(), Optional.ofNullable(webhookClientCaFile));
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    KubernetesClient client = ClusterConnection.connect(kubeconfig);
    try (KaiWebhookServer server = KaiWebhookServer.start(options, layout, client, Clock.systemUTC())) {
      awaitShutdown();
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    } catch (IOException e) {
      throw new UnavailableException(e.getMessage());
    } finally {
      client.close();
    }
    return 0;
  }

  /** Returns once the JVM is asked to stop (SIGTERM); the caller's server serves until then. */
  private static void awaitShutdown() throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown, "vgpu-scheduler-shutdown"));
    stopped.await();
  }

  /** The pod's name (POD_NAME, as HAMi's chart sets it), else the host name. */
  private static String identity() throws IOException {
    String pod = System.getenv("POD_NAME");
    if (pod != null && !pod.isEmpty()) {
      return pod;
    }
    return InetAddress.getLocalHost().getHostName();
  }
}
