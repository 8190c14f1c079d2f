package io.vgpu.examples.lab;

import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicy;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.QuotaLimits;
import io.vgpu.examples.lab.apiserver.ApiServerStandIn;
import io.vgpu.examples.lab.apiserver.UserInfo;
import io.vgpu.examples.lab.components.ComponentProcess;
import io.vgpu.examples.lab.components.JavaCommand;
import io.vgpu.examples.lab.components.ReferenceDeployment;
import io.vgpu.examples.lab.components.SchedulerLaunch;
import io.vgpu.examples.lab.kubelet.CgroupPlacement;
import io.vgpu.examples.lab.kubelet.ClusterAccess;
import io.vgpu.examples.lab.kubelet.NodePaths;
import io.vgpu.examples.lab.kubelet.PodResourcesServer;
import io.vgpu.examples.lab.kubelet.ContainerRuntime;
import io.vgpu.examples.lab.kubelet.KubeletStandIn;
import io.vgpu.examples.lab.kubelet.LabPodRunner;
import io.vgpu.examples.lab.kubelet.MockMachine;
import io.vgpu.examples.lab.kai.KaiAdmission;
import io.vgpu.examples.lab.kai.KaiResources;
import io.vgpu.examples.lab.kai.KaiStandIn;
import io.vgpu.examples.lab.kai.ReservationPods;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerConfig;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerStandIn;
import io.vgpu.examples.lab.report.PrometheusText;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.simulate.NodeAgentSelector;
import io.vgpu.k8s.simulate.NodeSpec;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioEvent;
import io.vgpu.k8s.simulate.Stack;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.yaml.JacksonTrees;
import io.vgpu.nvidia.HookLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The running system of one lab scenario: the API server stand-in with the scenario's nodes, namespaces
 * and quotas; {@code vgpu scheduler} and one {@code vgpu device-plugin} per GPU node as real processes,
 * with the reference deployment's flags (only places changed); a kubelet per node; kube-scheduler.
 * Components start in parallel; {@link #close} stops everything it started.
 */
public final class LabCluster implements AutoCloseable {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();
  private static final String SCHEDULER = "scheduler";
  private static final String DRIVER_LIBRARIES = "driver";
  private static final String POD_RESOURCES_FLAG = "--pod-resources-socket";
  /**
   * Whether this build's node agent takes {@code --pod-resources-socket} (a place the lab gives: its
   * kubelet's socket); an agent without the flag gets none, rather than failing on an unknown option.
   */
  private static final boolean AGENT_READS_POD_RESOURCES =
      new picocli.CommandLine(new io.vgpu.k8s.cli.DevicePluginCommand()).getCommandSpec().findOption(POD_RESOURCES_FLAG) != null;

  private final LabHome home;
  private final Scenario scenario;
  private final LabWorkspace workspace;
  private static final Duration MIN_START_TIMEOUT = Duration.ofSeconds(90);
  private final Duration readyTimeout;
  private final ReferenceDeployment deployment;
  private final JavaCommand java;
  private final List<String> nodeOrder;
  private final Map<String, MockMachine> machines = new LinkedHashMap<>();
  private final Map<String, KubeletStandIn> kubelets = Collections.synchronizedMap(new LinkedHashMap<>());
  private final Map<String, ComponentProcess> agents = Collections.synchronizedMap(new LinkedHashMap<>());
  private final Map<String, Integer> agentMetricsPorts = new LinkedHashMap<>();
  private final List<JavaCommand.Launch> launches = new ArrayList<>();
  private final HttpClient plainHttp = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2)).build();
  private ApiServerStandIn api;
  private KubernetesClient client;
  private final Map<UserInfo, KubernetesClient> userClients = new java.util.concurrent.ConcurrentHashMap<>();
  private CgroupPlacement cgroups;
  private ContainerRuntime runtime;
  private ComponentProcess scheduler;
  private List<String> schedulerArgs = List.of();
  private Map<String, String> schedulerEnv = Map.of();
  private @org.jspecify.annotations.Nullable KubeSchedulerStandIn kubeScheduler;
  private KubeSchedulerStandIn defaultScheduler;
  /** Whether KAI Scheduler schedules KAI's pods ({@code stack: kai}): its stand-in runs, vgpu is the isolation layer. */
  private final boolean kai;
  /**
   * Whether vgpu schedules KAI's pods itself ({@code stack: vgpu} with queues, PodGroups or pods naming
   * {@code kai-scheduler}): the chart is the one rendered with its KAI-dialect values.
   */
  private final boolean kaiDialect;
  private @org.jspecify.annotations.Nullable KaiStandIn kaiStandIn;
  private String webhookName = "";
  private SchedulerLaunch launch;
  private DeviceConfig config;
  private Path deviceConfigFile;

  private LabCluster(LabHome home, Scenario scenario, LabWorkspace workspace, Duration readyTimeout) {
    this.home = home;
    this.scenario = scenario;
    this.workspace = workspace;
    // A component's JVM start is not settling: on a loaded 2-core machine it alone takes 20 s and more.
    this.readyTimeout = readyTimeout.compareTo(MIN_START_TIMEOUT) < 0 ? MIN_START_TIMEOUT : readyTimeout;
    this.kai = scenario.stack() == Stack.KAI;
    this.kaiDialect = !kai && speaksKai(scenario);
    this.deployment = ReferenceDeployment.read(kai ? home.kaiDeployDirectory() : kaiDialect ? home.kaiDialectDeployDirectory() : home.deployDirectory());
    this.java = new JavaCommand(Optional.of(home.root().resolve("target/lab-cds")));
    this.nodeOrder = scenario.nodes().stream().map(NodeSpec::name).toList();
    this.config = scenario.config();
  }

  /**
   * Starts the system of a scenario and waits until every component is ready.
   *
   * @throws UnavailableException when a component fails to start or get ready (its log's tail is
   *     printed), or the machine cannot run containers
   */
  public static LabCluster start(LabHome home, Scenario scenario, LabWorkspace workspace, Duration readyTimeout) {
    return start(home, scenario, workspace, readyTimeout, c -> {});
  }

  /**
   * As {@link #start(LabHome, Scenario, LabWorkspace, Duration)}, handing the cluster to {@code
   * starting} before anything starts, so that an interrupt during start-up can stop what did start.
   */
  static LabCluster start(LabHome home, Scenario scenario, LabWorkspace workspace, Duration readyTimeout, Consumer<LabCluster> starting) {
    LabCluster cluster = new LabCluster(home, scenario, workspace, readyTimeout);
    starting.accept(cluster);
    try {
      cluster.boot();
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  private void boot() {
    // What containers execute or load is copied into the run: they run as nobody, who may not be able to
    // enter the checkout (a clone in root's home), while every user can reach the run's directory.
    Supplier<Path> probe = workspace.installOnFirstUse(() -> home.nativeFile("vgpu-lab-probe"), "bin");
    Map<String, String> driverLibraries = new LinkedHashMap<>();
    for (String lib : List.of("libcuda.so.1", "libnvidia-ml.so.1")) {
      driverLibraries.put(lib, workspace.install(home.nativeFile(lib), DRIVER_LIBRARIES).toString());
    }
    Path driverDir = workspace.directory(DRIVER_LIBRARIES);
    api = ApiServerStandIn.start();
    client = api.client();
    // The scheduler pod's containers share its ServiceAccount; each node agent is its own (LAB.md's identities).
    Path kubeconfig = api.writeKubeconfig(workspace.file("kubeconfigs/scheduler"), deployment.schedulerUser());
    createObjects();

    deviceConfigFile = workspace.file("config/device-config.yaml");
    writeDeviceConfig(scenario.configWritten().map(JacksonTrees::toJson).orElse(YAML.createObjectNode()));

    String runId = workspace.root().getFileName().toString();
    cgroups = CgroupPlacement.probe(runId);
    runtime = new ContainerRuntime(workspace, cgroups, ContainerRuntime.defaultLibraryDirectory());
    // plain HTTP on loopback: no CA for ca.crt to hold
    ClusterAccess access = new ClusterAccess(KubeletStandIn.LAB_ADDRESS, api.port(), "", api::serviceAccountToken);
    for (NodeSpec node : scenario.nodes()) {
      MockMachine machine = MockMachine.create(node, workspace.directory("nodes/" + node.name() + "/gpus"));
      machines.put(node.name(), machine);
      Path plugins = workspace.socketDirectory("nodes/" + node.name() + "/device-plugins", "nvidia-gpu.sock");
      try {
        kubelets.put(node.name(), new KubeletStandIn(node.name(), plugins, client(UserInfo.node(node.name())), new LabPodRunner(node.name(), runtime, machine, probe, driverLibraries),
            nodePaths(node.name()), workspace.directory("nodes/" + node.name() + "/pods"), access, podResourcesSocket(node.name())));
      } catch (IOException e) {
        throw new UnavailableException("cannot start the kubelet of node " + node.name() + ": " + e.getMessage());
      }
    }

    launch = SchedulerLaunch.plan(deployment, workspace, deviceConfigFile, kubeconfig);
    schedulerArgs = launch.args();
    schedulerEnv = launch.env();
    scheduler = component(SCHEDULER, withValues(schedulerArgs, config), schedulerEnv);

    for (NodeSpec node : scenario.nodes()) {
      if (!machines.get(node.name()).hasGpus() || !selects(deployment.devicePlugin().nodeSelector(), node.labels())) {
        continue;
      }
      int metrics = SchedulerLaunch.freePort();
      agentMetricsPorts.put(node.name(), metrics);
      Map<String, String> agentPlaces = new LinkedHashMap<>();
      agentPlaces.put("--device-config-file", deviceConfigFile.toString());
      agentPlaces.put("--node-name", node.name());
      agentPlaces.put("--kubeconfig", api.writeKubeconfig(workspace.file("kubeconfigs/device-plugin-" + node.name()), deployment.devicePluginUser(node.name())).toString());
      agentPlaces.put("--device-plugin-dir", workspace.root().resolve("nodes/" + node.name() + "/device-plugins").toString());
      agentPlaces.put("--hook-path", workspace.directory("nodes/" + node.name() + "/hook").toString());
      agentPlaces.put("--metrics-bind-address", "127.0.0.1:" + metrics);
      if (AGENT_READS_POD_RESOURCES) {
        agentPlaces.put(POD_RESOURCES_FLAG, podResourcesSocket(node.name()).toString());
      }
      Map<String, String> env = new LinkedHashMap<>(deployment.devicePlugin().env());
      env.remove("HOOK_PATH"); // a place: given as --hook-path
      deployment.devicePlugin().fieldEnv().forEach((k, field) -> env.put(k, field.equals("spec.nodeName") ? node.name() : ""));
      env.putAll(machines.get(node.name()).agentEnvironment());
      // The NVIDIA runtime gives the agent's container the driver's libraries.
      env.put("LD_LIBRARY_PATH", driverDir.toString());
      agents.put(node.name(), component("device-plugin/" + node.name(), ReferenceDeployment.withPlaces(deployment.devicePlugin().args(), agentPlaces), env));
    }

    agents.values().forEach(ComponentProcess::start);
    // The scheduler pod: its init container first, as kubelet runs it — the real `vgpu certificates`
    // command, run in this JVM (a JVM of its own would only add start-up time) — then the scheduler.
    launch.runCertificates(kubeconfig, workspace.file("logs/certificates.log"));
    scheduler.start();

    if (deployment.hasKubeScheduler()) {
      KubeSchedulerConfig kubeSchedulerConfig = KubeSchedulerConfig.of(deployment.schedulerConfiguration());
      URI prefix = kubeSchedulerConfig.extender().urlPrefix();
      int extenderPort = launch.labPort(prefix.getPort() < 0 ? 443 : prefix.getPort(), "the extender's urlPrefix " + prefix);
      kubeScheduler = new KubeSchedulerStandIn(client(deployment.schedulerUser()), kubeSchedulerConfig, URI.create("https://127.0.0.1:" + extenderPort + prefix.getRawPath()),
          launch.kubeSchedulerTls(kubeSchedulerConfig), () -> nodeOrder, launch.podName());
      // The cluster's own scheduler, for the pods that name default-scheduler (LAB.md, "Other schedulers").
      if (!kubeSchedulerConfig.schedulerNames().contains(KubeSchedulerStandIn.DEFAULT_SCHEDULER)) {
        defaultScheduler = KubeSchedulerStandIn.defaultScheduler(client(UserInfo.DEFAULT_SCHEDULER), kubeScheduler);
      }
    } else {
      // under KAI Scheduler vgpu runs no kube-scheduler: the cluster's own still schedules everything else
      defaultScheduler = KubeSchedulerStandIn.defaultScheduler(client(UserInfo.DEFAULT_SCHEDULER), () -> nodeOrder);
    }
    if (kai) {
      // KAI's webhook, then its controllers (LAB.md "Under KAI Scheduler"); its reservation pods run the probe's reserve op
      api.admission(new KaiAdmission(KaiStandIn::random7));
      kaiStandIn = new KaiStandIn(this::client, () -> nodeOrder, LabPodRunner.PROBE_IMAGE, List.of("reserve"), "", KaiStandIn.RESERVATION_TIMEOUT);
    }
    int webhookPort = deployment.webhookContainerPort();
    api.admission(webhookName, URI.create("https://127.0.0.1:" + launch.labPort(webhookPort, "the webhook's Service port")));

    awaitSchedulerReady();
    for (String node : agents.keySet()) {
      awaitAgentReady(node, -1);
    }
  }

  /**
   * Where a node's paths lie: the node agent's hook directory where {@code --hook-path} puts it (the
   * chart's {@code HOOK_PATH}{@code /vgpu} on the node), everything else under the node's own root.
   */
  /** Where a node's kubelet serves its PodResources API (kubelet's {@code /var/lib/kubelet/pod-resources/kubelet.sock}). */
  private Path podResourcesSocket(String node) {
    return workspace.socketDirectory("nodes/" + node + "/pod-resources", PodResourcesServer.SOCKET).resolve(PodResourcesServer.SOCKET);
  }

  private NodePaths nodePaths(String node) {
    String hook = deployment.devicePlugin().env().getOrDefault("HOOK_PATH", "/usr/local");
    return new NodePaths(workspace.directory("nodes/" + node + "/root"),
        Map.of(new HookLayout(hook).vgpuDirectory(), workspace.directory("nodes/" + node + "/hook").resolve("vgpu")));
  }

  private ComponentProcess component(String name, List<String> args, Map<String, String> env) {
    JavaCommand.Launch launch = java.command("info", args);
    launches.add(launch);
    Path log = workspace.file("logs/" + name.replace('/', '-') + ".log");
    return new ComponentProcess(name, launch.command(), env, log);
  }

  /**
   * The scheduler's arguments with the scenario's policies: the chart renders its values
   * {@code scheduler.defaultSchedulerPolicy.*} into these two flags, which win over the device config, so
   * a scenario's {@code nodeSchedulerPolicy}/{@code gpuSchedulerPolicy} plays those values.
   */
  private static List<String> withValues(List<String> args, DeviceConfig config) {
    Map<String, String> policies = new LinkedHashMap<>();
    policies.put("--node-scheduler-policy", config.nodeSchedulerPolicy());
    policies.put("--gpu-scheduler-policy", config.gpuSchedulerPolicy());
    policies.keySet().removeIf(flag -> args.stream().noneMatch(a -> a.equals(flag) || a.startsWith(flag + "=")));
    return ReferenceDeployment.withPlaces(args, policies);
  }

  private static boolean selects(Map<String, String> selector, Map<String, String> labels) {
    return selector.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
  }

  // --- API objects

  private void createObjects() {
    Set<String> namespaces = new LinkedHashSet<>(List.of("default", "kube-system"));
    if (kai) {
      namespaces.add(KaiStandIn.NAMESPACE);
      namespaces.add(KaiKeys.RESERVATION_NAMESPACE);
    }
    scenario.quotas().keySet().forEach(namespaces::add);
    scenario.events().forEach(e -> {
      if (e instanceof ScenarioEvent.Create c) {
        namespaces.add(c.ref().namespace());
      }
    });
    for (String ns : namespaces) {
      Namespace namespace = new NamespaceBuilder().withNewMetadata().withName(ns).addToLabels("kubernetes.io/metadata.name", ns).endMetadata().build();
      client.namespaces().resource(namespace).create();
      // what kube-controller-manager's root CA publisher puts in every namespace: the CA pods trust for
      // the API server (none: the stand-in speaks plain HTTP on loopback)
      client.configMaps().inNamespace(ns).resource(new ConfigMapBuilder().withNewMetadata().withName("kube-root-ca.crt").withNamespace(ns).endMetadata()
          .addToData("ca.crt", "").build()).create();
    }
    for (NodeSpec spec : scenario.nodes()) {
      Node node =
          new NodeBuilder()
              .withNewMetadata().withName(spec.name()).withLabels(spec.labels()).withAnnotations(spec.annotations()).endMetadata()
              .withNewStatus()
                  .addToCapacity("cpu", new Quantity("16")).addToCapacity("memory", new Quantity("64Gi")).addToCapacity("pods", new Quantity("110"))
                  .addToAllocatable("cpu", new Quantity("16")).addToAllocatable("memory", new Quantity("64Gi")).addToAllocatable("pods", new Quantity("110"))
                  .addNewCondition().withType("Ready").withStatus("True").withReason("KubeletReady").endCondition()
                  .addNewAddress().withType("InternalIP").withAddress("127.0.0.1").endAddress()
              .endStatus()
              .build();
      client.nodes().resource(node).create();
    }
    // What the chart installs besides workloads and that the lab's stand-ins read from the API: the
    // webhook configuration (its caBundle is patched by the scheduler pod's init container).
    JsonNode webhook = deployment.webhookConfiguration();
    webhookName = webhook.path("metadata").path("name").asString("");
    client.admissionRegistration().v1().mutatingWebhookConfigurations()
        .resource(PodJson.mapper().treeToValue(webhook, MutatingWebhookConfiguration.class)).create();
    // Its ValidatingAdmissionPolicies and their bindings: from now on the API server applies them to every write.
    for (JsonNode object : deployment.admissionPolicies()) {
      if (object.path("kind").asString("").equals("ValidatingAdmissionPolicy")) {
        client.admissionRegistration().v1().validatingAdmissionPolicies().resource(PodJson.mapper().treeToValue(object, ValidatingAdmissionPolicy.class)).create();
      } else {
        client.admissionRegistration().v1().validatingAdmissionPolicyBindings()
            .resource(PodJson.mapper().treeToValue(object, ValidatingAdmissionPolicyBinding.class)).create();
      }
    }
    if (kai) {
      createKaiObjects();
    } else if (kaiDialect) {
      // the scenario's Queues, in file order, as its author creates them before the scheduler starts
      for (ScenarioEvent.CreateQueue queue : scenario.queues()) {
        createKaiObject(queue);
      }
    }
    // The RuntimeClass NVIDIA's GPU operator installs, which the chart's prerequisites include.
    client.resources(io.fabric8.kubernetes.api.model.node.v1.RuntimeClass.class).resource(new RuntimeClassBuilder().withNewMetadata().withName("nvidia").endMetadata().withHandler("nvidia").build()).create();
    scenario.quotas().forEach((ns, limits) -> {
      Map<String, Quantity> hard = new LinkedHashMap<>();
      if (limits.memoryMiB() != QuotaLimits.UNLIMITED) {
        hard.put("limits." + config.resourceMemoryName(), new Quantity(Long.toString(limits.memoryMiB())));
      }
      if (limits.cores() != QuotaLimits.UNLIMITED) {
        hard.put("limits." + config.resourceCoreName(), new Quantity(Long.toString(limits.cores())));
      }
      client.resourceQuotas().inNamespace(ns).resource(
          new ResourceQuotaBuilder().withNewMetadata().withName("gpu").withNamespace(ns).endMetadata().withNewSpec().withHard(hard).endSpec().build()).create();
    });
  }

  /** KAI's ServiceAccounts and the scenario's Queues, in file order, as KAI's chart and the scenario's author create them. */
  private void createKaiObjects() {
    for (UserInfo user : List.of(KaiStandIn.POD_GROUPER, KaiStandIn.SCHEDULER, KaiStandIn.BINDER)) {
      String name = user.username().substring(user.username().lastIndexOf(':') + 1);
      client.serviceAccounts().inNamespace(KaiStandIn.NAMESPACE).resource(new io.fabric8.kubernetes.api.model.ServiceAccountBuilder().withNewMetadata()
          .withName(name).withNamespace(KaiStandIn.NAMESPACE).endMetadata().build()).create();
    }
    client.serviceAccounts().inNamespace(KaiKeys.RESERVATION_NAMESPACE).resource(new io.fabric8.kubernetes.api.model.ServiceAccountBuilder().withNewMetadata()
        .withName(ReservationPods.SERVICE_ACCOUNT).withNamespace(KaiKeys.RESERVATION_NAMESPACE).endMetadata().build()).create();
    for (ScenarioEvent.CreateQueue queue : scenario.queues()) {
      createKaiObject(queue);
    }
  }

  /**
   * Whether a scenario under {@code stack: vgpu} speaks KAI's dialect: it declares queues, creates a Queue
   * or PodGroup, or creates a pod naming {@code kai-scheduler}. Such a scenario runs on the chart's
   * KAI-dialect render (examples/deploy-kai-dialect), every other on its default render.
   */
  static boolean speaksKai(Scenario scenario) {
    if (!scenario.queues().isEmpty()) {
      return true;
    }
    for (ScenarioEvent e : scenario.events()) {
      if (e instanceof ScenarioEvent.CreateQueue || e instanceof ScenarioEvent.CreatePodGroup) {
        return true;
      }
      if (e instanceof ScenarioEvent.Create c && c.pod().getSpec() != null && KaiKeys.SCHEDULER_NAME.equals(c.pod().getSpec().getSchedulerName())) {
        return true;
      }
    }
    return false;
  }

  /** Whether vgpu schedules KAI's pods in this run (the KAI-dialect render). */
  public boolean kaiDialect() {
    return kaiDialect;
  }

  /** Creates a Queue or PodGroup of the scenario as its author (the lab's administrator). */
  public void createKaiObject(ScenarioEvent event) {
    if (event instanceof ScenarioEvent.CreateQueue q) {
      KaiResources.of(client, KaiResources.QUEUE).resource(withApiVersion(q.manifest(), KaiKeys.QUEUE_API_VERSION, "Queue")).create();
    } else if (event instanceof ScenarioEvent.CreatePodGroup g) {
      KaiResources.of(client, KaiResources.POD_GROUP).inNamespace(g.ref().namespace())
          .resource(withApiVersion(g.manifest(), KaiKeys.POD_GROUP_API_VERSION, "PodGroup")).create();
    }
  }

  /** Deletes a Queue or PodGroup. */
  public void deleteKaiObject(ScenarioEvent.DeleteObject event) {
    if (event.kind().equals("Queue")) {
      KaiResources.of(client, KaiResources.QUEUE).withName(event.name()).withGracePeriod(0).delete();
    } else {
      KaiResources.of(client, KaiResources.POD_GROUP).inNamespace(event.namespace()).withName(event.name()).withGracePeriod(0).delete();
    }
  }

  private static io.fabric8.kubernetes.api.model.GenericKubernetesResource withApiVersion(io.fabric8.kubernetes.api.model.GenericKubernetesResource manifest,
      String apiVersion, String kind) {
    io.fabric8.kubernetes.api.model.GenericKubernetesResource copy = KaiResources.generic(KaiResources.json(manifest));
    if (copy.getApiVersion() == null || copy.getApiVersion().isEmpty()) {
      copy.setApiVersion(apiVersion);
    }
    if (copy.getKind() == null || copy.getKind().isEmpty()) {
      copy.setKind(kind);
    }
    return copy;
  }

  /** Writes the device configuration the components read: HAMi's file, its {@code nvidia} section. */
  private void writeDeviceConfig(JsonNode nvidia) {
    ObjectNode root = YAML.createObjectNode();
    root.set("nvidia", overRendered(nvidia));
    try {
      Files.writeString(deviceConfigFile, YAML.writeValueAsString(root));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + deviceConfigFile, e);
    }
  }

  /**
   * The scenario's keys over the deployment's rendered {@code nvidia} section, a nested map (such as
   * {@code watchdog}) key by key, as a values override of the chart renders them: the components read
   * the chart's settings, vgpu's own ones among them (the watchdog's exempt namespaces), wherever the
   * scenario says nothing.
   */
  private JsonNode overRendered(JsonNode scenarioKeys) {
    JsonNode rendered = YAML.readTree(deployment.deviceConfiguration()).path("nvidia");
    if (!rendered.isObject()) {
      return scenarioKeys;
    }
    ObjectNode merged = ((ObjectNode) rendered).deepCopy();
    mergeInto(merged, scenarioKeys);
    return merged;
  }

  private static void mergeInto(ObjectNode target, JsonNode overrides) {
    overrides.properties().forEach(e -> {
      JsonNode current = target.get(e.getKey());
      if (current instanceof ObjectNode nested && e.getValue().isObject()) {
        mergeInto(nested, e.getValue());
      } else {
        target.set(e.getKey(), e.getValue());
      }
    });
  }

  // --- Readiness

  private void awaitSchedulerReady() {
    scheduler.awaitReady(this::schedulerReady, "ready (/readyz: ledger synced and leading)", readyTimeout);
  }

  private boolean schedulerReady() {
    URI readyz = URI.create("http://127.0.0.1:" + launch.metricsPort() + "/readyz");
    try {
      return plainHttp.send(HttpRequest.newBuilder(readyz).timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
    } catch (IOException e) {
      return false; // not listening yet
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Waits until a node agent is registered with its kubelet (a registration after {@code
   * registrationsBefore}) and the node's register annotation shows the devices the current
   * configuration gives.
   */
  private void awaitAgentReady(String node, int registrationsBefore) {
    KubeletStandIn kubelet = kubelets.get(node);
    if (kai) {
      // under KAI the agent serves whole cards and publishes the labels KAI reads; it registers no vGPUs
      agents.get(node).awaitReady(() -> kubelet.registrations() > registrationsBefore && kubelet.serving(io.vgpu.k8s.kai.KaiGpuRequest.GPU_RESOURCE)
          && labelled(node), "registered with its kubelet serving nvidia.com/gpu and the node labelled " + KaiKeys.NODE_GPU_MEMORY_LABEL, readyTimeout);
      return;
    }
    List<SchedulableDevice> expected = new DeviceRegistrar(config.schema().vendor()).register(machines.get(node).devices(), config.sharing());
    agents.get(node).awaitReady(
        () -> kubelet.registrations() > registrationsBefore && kubelet.serving(config.resourceCountName()) && registered(node, expected),
        "registered with its kubelet and its node annotation current", readyTimeout);
  }

  private boolean labelled(String node) {
    Node object = client.nodes().withName(node).get();
    return object != null && object.getMetadata().getLabels() != null && object.getMetadata().getLabels().containsKey(KaiKeys.NODE_GPU_MEMORY_LABEL);
  }

  private boolean registered(String node, List<SchedulableDevice> expected) {
    Node object = client.nodes().withName(node).get();
    String value = object == null || object.getMetadata().getAnnotations() == null ? null : object.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER);
    if (value == null) {
      return false;
    }
    List<SchedulableDevice> actual = NodeRegisterCodec.decode(value);
    if (actual.size() != expected.size()) {
      return false;
    }
    for (int i = 0; i < actual.size(); i++) {
      SchedulableDevice a = actual.get(i);
      SchedulableDevice e = expected.get(i);
      if (!a.uuid().equals(e.uuid()) || a.memoryMiB() != e.memoryMiB() || a.cores() != e.cores() || a.splitCount() != e.splitCount()) {
        return false;
      }
    }
    return true;
  }

  // --- Operations of events

  /** Stops and starts a component again with the same flags, and waits until it is ready. */
  public void restart(String component) {
    if (component.equals(SCHEDULER)) {
      scheduler.stop();
      scheduler.start();
      awaitSchedulerReady();
      return;
    }
    String node = component.substring("device-plugin/".length());
    ComponentProcess agent = agents.get(node);
    if (agent == null) {
      throw new UnavailableException("node " + node + " runs no device plugin (no GPUs, or not selected by the DaemonSet's nodeSelector)");
    }
    int before = kubelets.get(node).registrations();
    agent.stop();
    agent.start();
    awaitAgentReady(node, before);
  }

  /**
   * Rewrites the device configuration and restarts the node agents, as a {@code helm upgrade} of the
   * ConfigMap rolls them; the scheduler restarts too when a key it schedules by changed.
   *
   * @param written the whole {@code nvidia} section now in force
   * @param next the configuration it means
   */
  public void reconfigure(JsonNode written, DeviceConfig next) {
    boolean schedulerChanged = !next.engineConfig().equals(config.engineConfig()) || !next.schema().equals(config.schema());
    config = next;
    writeDeviceConfig(written);
    if (schedulerChanged) {
      scheduler.stop();
      scheduler = component(SCHEDULER, withValues(schedulerArgs, next), schedulerEnv);
      scheduler.start();
    }
    Map<String, Integer> before = new LinkedHashMap<>();
    agents.forEach((node, agent) -> {
      before.put(node, kubelets.get(node).registrations());
      agent.stop();
    });
    agents.values().forEach(ComponentProcess::start);
    if (schedulerChanged) {
      awaitSchedulerReady();
    }
    before.forEach(this::awaitAgentReady);
  }

  /** Every component's metrics now: {@code scheduler}, and {@code nodes} by node name. */
  public ObjectNode scrape() {
    ObjectNode out = YAML.createObjectNode();
    ObjectNode scheduler = metrics(launch.metricsPort());
    if (scheduler != null) {
      out.set("scheduler", scheduler);
    }
    ObjectNode nodes = out.putObject("nodes");
    agentMetricsPorts.forEach((node, port) -> {
      ObjectNode samples = metrics(port);
      if (samples != null) {
        nodes.set(node, samples);
      }
    });
    return out;
  }

  /** One component's samples; null when it serves no {@code /metrics} at all. */
  private @org.jspecify.annotations.Nullable ObjectNode metrics(int port) {
    ObjectNode out = YAML.createObjectNode();
    try {
      HttpResponse<String> r = plainHttp.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).timeout(Duration.ofSeconds(5)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() == 404) {
        return null; // a component that exports no metrics (the scheduler under KAI Scheduler serves only its probes)
      }
      PrometheusText.parse(r.body()).forEach((k, v) -> {
        if (v.finite()) {
          out.put(k, v.number());
        } else {
          out.put(k, v.text());
        }
      });
    } catch (IOException | RuntimeException e) {
      out.put("scrape_error", String.valueOf(e.getMessage()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return out;
  }

  // --- Accessors

  /** A client of the API server as the lab's administrator: for its bookkeeping. */
  public KubernetesClient client() {
    return client;
  }

  /** A client of the API server as {@code user}, made at the first call and closed with the cluster. */
  public KubernetesClient client(UserInfo user) {
    return userClients.computeIfAbsent(user, api::client);
  }

  /** kube-scheduler with vgpu's extender; absent under KAI Scheduler. */
  public Optional<KubeSchedulerStandIn> kubeScheduler() {
    return Optional.ofNullable(kubeScheduler);
  }

  /** The KAI Scheduler stand-in, under {@code stack: kai}. */
  public Optional<KaiStandIn> kai() {
    return Optional.ofNullable(kaiStandIn);
  }

  /** The pods the cluster's kube-schedulers bound, in order (vgpu's and the default one). */
  public List<io.vgpu.api.PodRef> placed() {
    return schedulers().get(0).placed();
  }

  /**
   * Every scheduler of the cluster: kube-scheduler with vgpu's extender, then the default scheduler for
   * the pods that name {@code default-scheduler}. {@link KubeSchedulerStandIn#placed} of the first lists
   * both schedulers' placements.
   */
  public List<KubeSchedulerStandIn> schedulers() {
    List<KubeSchedulerStandIn> out = new ArrayList<>();
    if (kubeScheduler != null) {
      out.add(kubeScheduler);
    }
    if (defaultScheduler != null) {
      out.add(defaultScheduler);
    }
    return out;
  }

  /** The kubelets by node, in the scenario's order. */
  public Map<String, KubeletStandIn> kubelets() {
    return kubelets;
  }

  /** The mock machines by node. */
  public Map<String, MockMachine> machines() {
    return machines;
  }

  /**
   * The labels a node needs for the scheduler to register it: its {@code --node-label-selector} (the
   * reference deployment renders none: every node).
   */
  public Map<String, String> schedulerNodeLabels() {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < schedulerArgs.size(); i++) {
      String arg = schedulerArgs.get(i);
      String value = arg.startsWith("--node-label-selector=") ? arg.substring("--node-label-selector=".length())
          : arg.equals("--node-label-selector") && i + 1 < schedulerArgs.size() ? schedulerArgs.get(i + 1) : null;
      if (value != null) {
        for (String pair : value.split(",")) {
          int eq = pair.indexOf('=');
          if (eq > 0) {
            out.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
          }
        }
      }
    }
    return out;
  }

  /**
   * Why a node with GPUs runs no node agent: the labels of the node agent DaemonSet's {@code nodeSelector}
   * it lacks, so its GPUs never register. Empty for a node that runs one, or has no GPU.
   */
  public Optional<String> withoutNodeAgent(String node) {
    for (NodeSpec spec : scenario.nodes()) {
      List<String> missing = NodeAgentSelector.missing(deployment.devicePlugin().nodeSelector(), spec.labels());
      if (spec.name().equals(node) && !spec.devices().isEmpty() && !missing.isEmpty()) {
        return Optional.of("node " + node + " has no node agent: it lacks the label " + String.join(", ", missing) + " the DaemonSet selects");
      }
    }
    return Optional.empty();
  }

  /** The configuration in force. */
  public DeviceConfig config() {
    return config;
  }

  /** The real components, by name, for failure reports. */
  public List<ComponentProcess> components() {
    List<ComponentProcess> out = new ArrayList<>();
    if (scheduler != null) {
      out.add(scheduler);
    }
    out.addAll(List.copyOf(agents.values()));
    return out;
  }

  /** A component that died, if any. */
  public Optional<ComponentProcess> deadComponent() {
    return components().stream().filter(c -> !c.alive()).findFirst();
  }

  @Override
  public void close() {
    if (kaiStandIn != null) {
      kaiStandIn.close();
    }
    if (kubeScheduler != null) {
      kubeScheduler.close();
    }
    if (defaultScheduler != null) {
      defaultScheduler.close();
    }
    kubelets.values().parallelStream().forEach(KubeletStandIn::close);
    components().parallelStream().forEach(ComponentProcess::stop);
    launches.forEach(JavaCommand.Launch::publishArchive);
    userClients.values().forEach(KubernetesClient::close);
    if (client != null) {
      client.close();
    }
    if (api != null) {
      api.close();
    }
    if (runtime != null) {
      runtime.close();
    }
    if (cgroups != null) {
      cgroups.removeAll();
    }
  }

  /** Kills everything at once (Ctrl-C): processes first, the rest as {@link #close}. */
  public void kill() {
    // runs on the shutdown hook's thread, possibly while start-up is adding to these maps
    for (KubeletStandIn kubelet : List.copyOf(kubelets.values())) {
      kubelet.workers().values().forEach(w -> w.containers().forEach(c -> {
        if (c.current() != null) {
          ProcessHandle.of(c.current().pid()).ifPresent(p -> {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
          });
        }
      }));
    }
    components().forEach(ComponentProcess::kill);
  }
}
