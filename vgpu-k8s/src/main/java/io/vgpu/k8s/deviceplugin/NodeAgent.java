package io.vgpu.k8s.deviceplugin;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.vgpu.api.Device;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.api.spi.ContractSettings;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.kai.KaiGrantWriter;
import io.vgpu.k8s.scheduler.EventRecorder;
import io.vgpu.k8s.scheduler.NodeLock;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.k8s.watchdog.GpuProcesses;
import io.vgpu.k8s.watchdog.HostProcesses;
import io.vgpu.k8s.watchdog.KubeletPodResources;
import io.vgpu.k8s.watchdog.MemoryWatchdog;
import io.vgpu.k8s.watchdog.WatchdogMetrics;
import io.vgpu.k8s.watchdog.WholeCardGrants;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.HostPreparation;
import io.vgpu.nvidia.Interposer;
import io.vgpu.nvidia.NvidiaContainerContract;
import io.vgpu.nvidia.NvidiaDeviceSource;
import io.vgpu.nvidia.NvmlDevice;
import io.vgpu.nvidia.NvmlException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code vgpu device-plugin} assembled: the interposer installed on the host, the kubelet device
 * plugin (kept registered across kubelet restarts), the node's registration for the scheduler every
 * 30 seconds (5 after an error, at once on a health change), per-container host directories created
 * at Allocate and removed when their pod is gone, the node monitor's metrics, and, over NVML, the
 * memory watchdog that holds every container to its grant by the driver's own accounting.
 */
public final class NodeAgent implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);
  private static final Duration REGISTER_INTERVAL = Duration.ofSeconds(30);
  private static final Duration REGISTER_RETRY = Duration.ofSeconds(5);
  private static final Duration KUBELET_CHECK = Duration.ofSeconds(2);
  private static final Duration CLEANUP_INTERVAL = Duration.ofSeconds(60);
  /** How often KAI fraction pods still without a grant are looked at again, besides on every pod change. */
  private static final Duration KAI_RECONCILE = Duration.ofSeconds(2);

  /**
   * How the agent runs.
   *
   * @param nodeName this node (from {@code NODE_NAME} or {@code --node-name})
   * @param hookPath HAMi's {@code HOOK_PATH}: the interposer lives in {@code <hookPath>/vgpu}
   * @param pluginDirectory kubelet's device-plugin directory
   * @param endpoint the plugin's socket name (HAMi: {@code nvidia-gpu.sock})
   * @param metricsBind the monitor's address, or empty for no monitor
   * @param fieldSelector whether to ask the API server for this node's pods only (off for test servers
   *     that cannot evaluate {@code spec.nodeName} selectors)
   */
  public record Options(
      String nodeName, Path hookPath, Path pluginDirectory, String endpoint, String metricsBind, boolean fieldSelector, Stack stack, Path podResourcesSocket) {
    /** kubelet's PodResources socket, where kubelet serves it by default. */
    public static final Path DEFAULT_POD_RESOURCES_SOCKET = Path.of("/var/lib/kubelet/pod-resources/kubelet.sock");

    /** Options for vgpu's own stack ({@link Stack#HAMI}). */
    public Options(String nodeName, Path hookPath, Path pluginDirectory, String endpoint, String metricsBind, boolean fieldSelector) {
      this(nodeName, hookPath, pluginDirectory, endpoint, metricsBind, fieldSelector, Stack.HAMI, DEFAULT_POD_RESOURCES_SOCKET);
    }
  }

  /** Which scheduler the agent serves. */
  public enum Stack {
    /**
     * vgpu's scheduler (HAMi's protocol): sharing slots advertised per card, Allocate serves the
     * scheduler's signed grant through the interposer.
     */
    HAMI,
    /**
     * KAI Scheduler: whole cards advertised as NVIDIA's device plugin does; KAI's fraction containers
     * get their grant from {@link KaiGrantWriter}; the watchdog learns the whole cards from kubelet's
     * PodResources API.
     */
    KAI;

    /** {@code hami} or {@code kai}, as {@code --stack} takes it. */
    public String key() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private final KubernetesClient client;
  private final Options options;
  private final DeviceSource source;
  private final HookLayout layout;
  private final AdvertisedDevices advertised;
  private final NodeRegistrar registrar;
  private final KubeletPlugin plugin;
  private final SharedIndexInformer<Pod> pods;
  private final ScheduledExecutorService background;
  private final DeviceSource.Subscription health;
  private final @Nullable HttpService monitor;
  private final @Nullable MemoryWatchdog watchdog;
  private final @Nullable KaiGrantWriter kaiGrants;
  private final @Nullable KubeletPodResources podResources;

  private NodeAgent(Builder b) {
    this.client = b.client;
    this.options = b.options;
    this.source = b.source;
    this.layout = b.layout;
    this.advertised = b.advertised;
    this.registrar = b.registrar;
    this.plugin = b.plugin;
    this.pods = b.pods;
    this.background = b.background;
    this.health = b.health;
    this.monitor = b.monitor;
    this.watchdog = b.watchdog;
    this.kaiGrants = b.kaiGrants;
    this.podResources = b.podResources;
  }

  private static final class Builder {
    KubernetesClient client;
    Options options;
    DeviceSource source;
    HookLayout layout;
    AdvertisedDevices advertised;
    NodeRegistrar registrar;
    KubeletPlugin plugin;
    SharedIndexInformer<Pod> pods;
    ScheduledExecutorService background;
    DeviceSource.Subscription health;
    HttpService monitor;
    MemoryWatchdog watchdog;
    KaiGrantWriter kaiGrants;
    KubeletPodResources podResources;
  }

  /**
   * Starts the agent taking grants as their annotations say ({@link PodGrants#unverified}).
   *
   * @throws IOException when the interposer cannot be installed or the monitor cannot bind
   */
  public static NodeAgent start(Options options, DeviceConfig config, DeviceSource source, KubernetesClient client, Clock clock) throws IOException {
    return start(options, config, source, client, PodGrants.unverified(), clock);
  }

  /**
   * Starts the agent.
   *
   * @param grants which grants Allocate serves and the watchdog holds containers to
   * @throws IOException when the interposer cannot be installed or the monitor cannot bind
   */
  public static NodeAgent start(Options options, DeviceConfig config, DeviceSource source, KubernetesClient client, PodGrants grants, Clock clock)
      throws IOException {
    if (!grants.verifies()) {
      LOG.warn("grants are not verified (no --grant-key-secret): Allocate and the watchdog take any pod's hami.io/vgpu-devices-allocated as written");
    }
    Builder b = new Builder();
    b.client = client;
    b.options = options;
    b.source = source;
    b.layout = new HookLayout(options.hookPath().toString());
    if (Interposer.bundled()) {
      Interposer.Installation installed = Interposer.install(options.hookPath());
      LOG.info("interposer {} at {}", installed.changed() ? "installed" : "already current", installed.library());
    } else {
      LOG.warn("this build carries no libvgpu.so (it was built without a C compiler): containers get their env but no enforcement");
    }
    ContractSettings settings = config.contractSettings().withHookPath(options.hookPath().toString());
    if (source instanceof NvidiaDeviceSource nvidia && settings.passDeviceSpecs()) {
      settings = settings.withDeviceSpecs(settings.devRoot(), nvidia.deviceNodes());
    }
    ContainerContract contract = contractFor(config.schema().vendor(), settings);
    boolean kai = options.stack() == Stack.KAI;
    if (kai && !(contract instanceof NvidiaContainerContract)) {
      throw new IllegalStateException("--stack kai serves NVIDIA cards only, not vendor " + config.schema().vendor());
    }
    if (kai) {
      // vgpu's webhook mounts both as hostPath Directory volumes: a fraction pod waits (FailedMount)
      // until they exist, so they exist before kubelet hears of this node's cards.
      Files.createDirectories(Path.of(b.layout.kaiGrantsDirectory()));
      Files.createDirectories(Path.of(b.layout.containersDirectory()));
    }
    b.advertised = new AdvertisedDevices(config.enableNumaTopology(), kai);
    b.registrar = new NodeRegistrar(client, options.nodeName(), source, new DeviceRegistrar(config.schema().vendor()), config.sharing(), b.advertised);
    EventRecorder events = new EventRecorder(client, "vgpu-device-plugin", clock);
    DevicePluginService.Allocator allocator =
        kai
            ? new WholeCardAllocator(b.advertised, ((NvidiaContainerContract) contract)::wholeCards)
            : new PodAllocator(
            client,
            options.nodeName(),
            config.schema().countResource(),
            (pod, uid, grant, env) -> {
              ContainerContract.Allocation allocation = contract.allocate(pod, uid, grant, env);
              try {
                HostPreparation.prepare(allocation);
              } catch (IOException e) {
                throw new PodAllocator.AllocationException("preparing the host for " + pod + " container " + grant.name() + ": " + e.getMessage());
              }
              return allocation;
            },
            new NodeLock(client, Duration.ofMinutes(5), clock),
            grants,
            events::warning,
            options.fieldSelector());
    b.plugin = new KubeletPlugin(options.pluginDirectory(), options.endpoint(), config.schema().countResource(), new DevicePluginService(b.advertised, allocator));
    // Every pod bound here, whatever its labels: the watchdog must find a GPU process's pod even when
    // its owner removed the label the scheduler set.
    b.pods =
        options.fieldSelector()
            ? client.pods().inAnyNamespace().withField("spec.nodeName", options.nodeName()).runnableInformer(0)
            : client.pods().inAnyNamespace().runnableInformer(0);
    try {
      b.pods.start().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IOException("the pod cache of node " + options.nodeName() + " did not sync: " + e.getMessage(), e);
    }
    b.background =
        Executors.newScheduledThreadPool(
            2,
            r -> {
              Thread t = new Thread(r, "vgpu-node-agent");
              t.setDaemon(true);
              return t;
            });
    PrometheusRegistry registry = options.metricsBind().isEmpty() ? null : new PrometheusRegistry();
    if (kai) {
      b.podResources = new KubeletPodResources(options.podResourcesSocket(), config.schema().countResource(), Duration.ofSeconds(5));
    }
    if (source instanceof NvidiaDeviceSource nvidia) {
      b.watchdog =
          new MemoryWatchdog(
              config.watchdog(),
              GpuProcesses.nvml(nvidia),
              () -> b.pods.getIndexer().list(),
              b.layout,
              grants,
              options.nodeName(),
              kai ? new WholeCardGrants(b.podResources::list, config.schema().countResource(), () -> cardMiB(source).keySet()) : null,
              HostProcesses.procfs(),
              events::warning,
              registry == null ? new WatchdogMetrics() : new WatchdogMetrics(registry),
              clock);
    } else {
      LOG.info("device source {} reads no NVML: no memory watchdog", source.name());
    }
    if (kai) {
      b.kaiGrants =
          new KaiGrantWriter(client, options.nodeName(), b.layout, (NvidiaContainerContract) contract, () -> b.pods.getIndexer().list(), () -> cardMiB(source), events::warning);
    }
    if (registry != null) {
      HookLayout layout = b.layout;
      MemoryWatchdog watchdog = b.watchdog;
      registry.register(
          new NodeMonitor(
              options.nodeName(),
              () -> b.pods.getIndexer().list(),
              (uid, container) -> Path.of(layout.containerDirectory(uid, container), HookLayout.REGION_NAME),
              hostGpus(source),
              watchdog == null ? (uid, container, uuid) -> OptionalLong.empty() : watchdog::nvmlBytes,
              clock,
              () -> kaiGranted(b.kaiGrants)));
      InetSocketAddress address = HttpService.parseAddress("--metrics-bind-address", options.metricsBind());
      b.monitor = HttpService.builder(address).name("monitor").threads(2).route("GET", "/metrics", r -> metrics(registry)).start();
    }
    NodeAgent[] self = new NodeAgent[1];
    b.health = source.watchHealth(devices -> b.background.execute(() -> self[0].registrarPassOk()));
    NodeAgent agent = new NodeAgent(b);
    self[0] = agent;
    if (kai) {
      // KAI reads nvidia.com/gpu.memory when it places a fraction: the labels are on the node before
      // kubelet hears of a single card.
      while (!agent.registrarPassOk()) {
        try {
          Thread.sleep(REGISTER_RETRY.toMillis());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          agent.close();
          throw new IOException("interrupted before node " + options.nodeName() + " was labelled", e);
        }
      }
      agent.scheduleRegistration(REGISTER_INTERVAL);
      KaiGrantWriter writer = b.kaiGrants;
      b.pods.addEventHandler(new ResourceEventHandler<Pod>() {
        @Override
        public void onAdd(Pod pod) {
          b.background.execute(writer::reconcile);
        }

        @Override
        public void onUpdate(Pod before, Pod after) {
          b.background.execute(writer::reconcile);
        }

        @Override
        public void onDelete(Pod pod, boolean unknownFinalState) {}
      });
      b.background.scheduleWithFixedDelay(writer::reconcile, 0, KAI_RECONCILE.toMillis(), TimeUnit.MILLISECONDS);
    } else {
      agent.scheduleRegistration(Duration.ZERO);
    }
    b.background.scheduleWithFixedDelay(agent::keepRegistered, 0, KUBELET_CHECK.toMillis(), TimeUnit.MILLISECONDS);
    b.background.scheduleWithFixedDelay(agent::cleanUp, CLEANUP_INTERVAL.toMillis(), CLEANUP_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    if (b.watchdog != null) {
      b.watchdog.start();
    }
    LOG.info("vgpu node agent for {} serving {} in {}", options.nodeName(), config.schema().countResource(), options.pluginDirectory());
    return agent;
  }

  /** The KAI fraction containers holding a grant, for the monitor; none under vgpu's own stack. */
  private static List<NodeMonitor.GrantedContainer> kaiGranted(@Nullable KaiGrantWriter writer) {
    if (writer == null) {
      return List.of();
    }
    return writer.granted().stream().map(g -> new NodeMonitor.GrantedContainer(g.pod(), g.container(), g.devices())).toList();
  }

  /** This node's cards present now, each with the MiB its driver reports. */
  private static Map<String, Long> cardMiB(DeviceSource source) {
    Set<String> lost = source.lostDevices();
    Map<String, Long> out = new LinkedHashMap<>();
    for (Device d : source.devices()) {
      if (!lost.contains(d.uuid())) {
        out.put(d.uuid(), (long) d.memoryMiB());
      }
    }
    return out;
  }

  /** The vendor's contract, found through {@link ServiceLoader}. */
  static ContainerContract contractFor(String vendor, ContractSettings settings) {
    for (ContainerContractProvider provider : ServiceLoader.load(ContainerContractProvider.class, NodeAgent.class.getClassLoader())) {
      if (provider.vendor().equals(vendor)) {
        return provider.create(settings);
      }
    }
    throw new IllegalStateException("no container contract for vendor " + vendor + " on the class path (vgpu-nvidia missing?)");
  }

  /** Host GPU statistics for the monitor: from NVML when the source reads NVML, else none. */
  private static NodeMonitor.HostGpus hostGpus(DeviceSource source) {
    if (!(source instanceof NvidiaDeviceSource nvidia)) {
      return List::of;
    }
    return () -> {
      List<NodeMonitor.HostGpu> out = new ArrayList<>();
      for (NvmlDevice d : nvidia.nvml().devices()) {
        try {
          String name = d.name();
          String type = name.startsWith("NVIDIA") ? name : "NVIDIA-" + name;
          NvmlDevice.Utilization u = d.utilization();
          out.add(new NodeMonitor.HostGpu(d.index(), d.uuid(), type, d.memory().used(), u.gpu(), u.memory()));
        } catch (NvmlException e) {
          LOG.debug("no statistics for a GPU: {}", e.getMessage());
        }
      }
      return out;
    };
  }

  private static HttpService.Response metrics(PrometheusRegistry registry) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, registry.scrape());
    return new HttpService.Response(200, PrometheusTextFormatWriter.CONTENT_TYPE, out.toByteArray());
  }

  /** The monitor's port, or -1 without a monitor. */
  public int monitorPort() {
    return monitor == null ? -1 : monitor.port();
  }

  /** What kubelet is told now. */
  public AdvertisedDevices advertised() {
    return advertised;
  }

  private void scheduleRegistration(Duration delay) {
    background.schedule(
        () -> scheduleRegistration(registrarPassOk() ? REGISTER_INTERVAL : REGISTER_RETRY), delay.toMillis(), TimeUnit.MILLISECONDS);
  }

  private boolean registrarPassOk() {
    try {
      registrar.register();
      return true;
    } catch (RuntimeException e) {
      LOG.warn("registering node {} failed: {}", options.nodeName(), HttpService.oneLine(String.valueOf(e.getMessage())));
      return false;
    }
  }

  private void keepRegistered() {
    try {
      plugin.ensureRegistered();
    } catch (RuntimeException e) {
      LOG.warn("kubelet registration: {}", HttpService.oneLine(String.valueOf(e.getMessage())));
    }
  }

  /**
   * Removes per-container directories and limits files whose pod no longer runs on this node. Only
   * entries of pods the cache does not know are removed, and only while the cache is in sync.
   */
  void cleanUp() {
    if (!pods.hasSynced()) {
      return;
    }
    Set<String> live = new HashSet<>();
    for (Pod pod : pods.getIndexer().list()) {
      if (pod.getMetadata().getUid() != null) {
        live.add(pod.getMetadata().getUid());
      }
    }
    removeStale(Path.of(layout.vgpuDirectory(), "containers"), live);
    removeStale(Path.of(layout.vgpuDirectory(), "limits"), live);
    removeStale(Path.of(layout.kaiGrantsDirectory()), live);
  }

  private static void removeStale(Path directory, Set<String> liveUids) {
    if (!Files.isDirectory(directory)) {
      return;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
      for (Path entry : entries) {
        String name = entry.getFileName().toString();
        int cut = name.indexOf('_');
        if (cut <= 0 || liveUids.contains(name.substring(0, cut))) {
          continue;
        }
        deleteRecursively(entry);
        LOG.info("removed {} of a pod that is gone", entry);
      }
    } catch (IOException | UncheckedIOException e) {
      LOG.warn("cleaning {}: {}", directory, e.getMessage());
    }
  }

  private static void deleteRecursively(Path path) throws IOException {
    try (Stream<Path> walk = Files.walk(path)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  /** The writer of KAI fraction containers' grants, under {@link Stack#KAI}; null otherwise. */
  public @Nullable KaiGrantWriter kaiGrants() {
    return kaiGrants;
  }

  @Override
  public void close() {
    if (watchdog != null) {
      watchdog.close();
    }
    if (podResources != null) {
      podResources.close();
    }
    health.close();
    background.shutdownNow();
    plugin.close();
    pods.close();
    if (monitor != null) {
      monitor.close();
    }
    source.close();
  }
}
