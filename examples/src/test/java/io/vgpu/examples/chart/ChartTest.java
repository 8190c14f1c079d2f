package io.vgpu.examples.chart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.types.SimpleType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.examples.chart.RenderedChart.Document;
import io.vgpu.examples.chart.RenderedChart.Options;
import io.vgpu.k8s.cli.Vgpu;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import io.vgpu.k8s.config.WatchdogConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * charts/vgpu as Helm renders it: every object is a Kubernetes object fabric8 reads as its model,
 * every vgpu container's args are what the `vgpu` command line accepts, HAMi's values reach the
 * components, and the webhook, certificates and extender are wired the way vgpu's code needs them.
 */
class ChartTest {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();
  private static final KubernetesSerialization KUBE = new KubernetesSerialization();
  private static final Set<String> FOREIGN_KINDS = Set.of("Issuer", "Certificate", "ServiceMonitor"); // CRDs fabric8 has no model for here
  private static final Map<String, String> VGPU_CONTAINERS = Map.of("certificates", "certificates", "vgpu-scheduler-extender", "scheduler", "device-plugin", "device-plugin");

  @TempDir Path dir;

  /** Every object parses as its fabric8 model, and every vgpu container's args parse with its subcommand. */
  static void assertRunnable(RenderedChart chart) {
    assertRunnable(chart, Set.of());
  }

  /** As {@link #assertRunnable(RenderedChart)}, without parsing the args of the containers named. */
  static void assertRunnable(RenderedChart chart, Set<String> unparsed) {
    assertThat(chart.documents()).isNotEmpty();
    for (Document d : chart.documents()) {
      HasMetadata object = KUBE.unmarshal(d.yaml(), HasMetadata.class);
      assertThat(object.getMetadata().getName()).as(d.template()).isNotEmpty();
      if (!FOREIGN_KINDS.contains(d.kind())) {
        assertThat(object).as(d.template() + " " + d.kind() + " is a known model").isNotInstanceOf(GenericKubernetesResource.class);
      }
      assertThat(d.tree().path("metadata").path("annotations").has("helm.sh/hook")).as(d.template() + ": no hooks").isFalse();
      assertThat(d.kind()).as("no certgen jobs").isNotIn("Job", "CronJob");
    }
    for (String kind : List.of("Deployment", "DaemonSet")) {
      for (Document workload : chart.all(kind)) {
        JsonNode spec = workload.tree().path("spec").path("template").path("spec");
        for (String list : List.of("initContainers", "containers")) {
          for (JsonNode container : spec.path(list)) {
            String name = container.path("name").asString();
            if (!VGPU_CONTAINERS.containsKey(name) || unparsed.contains(name)) {
              continue;
            }
            List<String> args = RenderedChart.args(container);
            assertThat(args).as(name).first().isEqualTo(VGPU_CONTAINERS.get(name));
            CommandLine.ParseResult parsed = new CommandLine(new Vgpu()).parseArgs(args.toArray(String[]::new));
            assertThat(parsed.subcommand().commandSpec().name()).isEqualTo(VGPU_CONTAINERS.get(name));
            assertPathsAreMounted(spec, container, args);
          }
        }
      }
    }
  }

  /** Every file or directory a vgpu container's flag names lies in a volume mounted into that container. */
  private static void assertPathsAreMounted(JsonNode podSpec, JsonNode container, List<String> args) {
    for (String flag : List.of("--cert_file", "--key_file", "--client-ca-file", "--webhook-client-ca-file", "--device-config-file", "--client-dir", "--serving-dir")) {
      RenderedChart.flag(args, flag).ifPresent(path -> assertThat(mountOf(container, path)).as(container.path("name").asString() + " " + flag + "=" + path).isNotNull());
    }
  }

  /** The volumeMount that holds {@code path} in this container, or null. */
  static JsonNode mountOf(JsonNode container, String path) {
    for (JsonNode mount : container.path("volumeMounts")) {
      String at = mount.path("mountPath").asString();
      if (path.equals(at) || path.startsWith(at.endsWith("/") ? at : at + "/")) {
        return mount;
      }
    }
    return null;
  }

  @Test
  void defaultValuesRenderObjectsThatRun() {
    assertRunnable(RenderedChart.defaults());
  }

  @Test
  void helmLintIsClean() {
    var lint = new com.marcnuri.helm.Helm(RenderedChart.CHART).lint().strict().call();
    assertThat(lint.isFailed()).as(lint.getMessages().toString()).isFalse();
    assertThat(lint.getMessages()).allMatch(m -> m.startsWith("[INFO] Chart.yaml: icon is recommended"));
  }

  @Test
  void kubeSchedulerIsTheClustersVersionFromRegistryK8sIo() {
    RenderedChart k3s = RenderedChart.render(Options.defaults().kube("v1.33.1+k3s1"));
    assertThat(k3s.container("Deployment", "hami-scheduler", "kube-scheduler").path("image").asString()).isEqualTo("registry.k8s.io/kube-scheduler:v1.33.1");
    JsonNode config = YAML.readTree(k3s.configMapFile("hami-scheduler", "config.yaml"));
    assertThat(config.path("apiVersion").asString()).isEqualTo("kubescheduler.config.k8s.io/v1");
    assertThat(RenderedChart.failure(Options.defaults().kube("v1.29.4"))).get().asString().contains("incompatible with Kubernetes v1.29.4");
  }

  @Test
  void theExtenderAnswersOnlyKubeSchedulersClientCertificateOverLoopback() {
    RenderedChart chart = RenderedChart.defaults();
    JsonNode pod = chart.get("Deployment", "hami-scheduler").path("spec").path("template").path("spec");
    JsonNode init = chart.container("Deployment", "hami-scheduler", "certificates");
    JsonNode kubeScheduler = chart.container("Deployment", "hami-scheduler", "kube-scheduler");
    JsonNode extender = chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender");
    List<String> args = RenderedChart.args(extender);
    String bind = RenderedChart.flag(args, "--extender-bind-address").orElseThrow();
    assertThat(bind).startsWith("127.0.0.1:");

    JsonNode config = YAML.readTree(chart.configMapFile("hami-scheduler", "config.yaml"));
    JsonNode call = config.path("extenders").get(0);
    assertThat(call.path("urlPrefix").asString()).isEqualTo("https://" + bind);
    JsonNode tls = call.path("tlsConfig");
    assertThat(tls.has("insecure")).isFalse();
    assertThat(tls.path("serverName").asString()).isEqualTo("hami-scheduler.kube-system.svc");
    // kube-scheduler presents the client certificate the init step wrote, and the extender trusts the CA
    // that signed it: both are files of the same emptyDir, written before either container starts.
    String clientCa = RenderedChart.flag(args, "--client-ca-file").orElseThrow();
    String clientDir = RenderedChart.flag(RenderedChart.args(init), "--client-dir").orElseThrow();
    assertThat(clientCa).isEqualTo(clientDir + "/ca.crt");
    assertThat(tls.path("certFile").asString()).isEqualTo(clientDir + "/tls.crt");
    assertThat(tls.path("keyFile").asString()).isEqualTo(clientDir + "/tls.key");
    String volume = mountOf(init, clientDir).path("name").asString();
    assertThat(mountOf(kubeScheduler, tls.path("certFile").asString()).path("name").asString()).isEqualTo(volume);
    assertThat(mountOf(extender, clientCa).path("name").asString()).isEqualTo(volume);
    // The serving certificate kube-scheduler checks (caFile) is the one the extender serves.
    String servingDir = RenderedChart.flag(RenderedChart.args(init), "--serving-dir").orElseThrow();
    assertThat(RenderedChart.flag(args, "--cert_file")).contains(servingDir + "/tls.crt");
    assertThat(tls.path("caFile").asString()).isEqualTo(servingDir + "/ca.crt");
    String serving = mountOf(init, servingDir).path("name").asString();
    assertThat(mountOf(kubeScheduler, tls.path("caFile").asString()).path("name").asString()).isEqualTo(serving);
    assertThat(mountOf(extender, servingDir + "/tls.crt").path("name").asString()).isEqualTo(serving);
    assertThat(volumeOf(pod, volume).has("emptyDir")).isTrue();
    assertThat(volumeOf(pod, serving).has("emptyDir")).isTrue();
    // The serving certificate covers the name kube-scheduler checks.
    assertThat(RenderedChart.args(init)).contains("--dns-name=" + tls.path("serverName").asString());
    // kube-scheduler reads the configuration this ConfigMap holds.
    assertThat(RenderedChart.args(kubeScheduler)).contains("--config=/config/config.yaml");
    assertThat(volumeOf(pod, mountOf(kubeScheduler, "/config/config.yaml").path("name").asString()).path("configMap").path("name").asString()).isEqualTo("hami-scheduler");
  }

  private static JsonNode volumeOf(JsonNode podSpec, String name) {
    for (JsonNode v : podSpec.path("volumes")) {
      if (v.path("name").asString().equals(name)) {
        return v;
      }
    }
    throw new AssertionError("no volume " + name);
  }

  @Test
  void theWebhookFailsClosedForGpuPodsAndNeverSeesOtherPods() {
    JsonNode webhooks = RenderedChart.defaults().get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks");
    assertThat(webhooks).hasSize(1);
    JsonNode hook = webhooks.get(0);
    assertThat(hook.path("name").asString()).isEqualTo("vgpu.hami.io");
    assertThat(hook.path("failurePolicy").asString()).isEqualTo("Fail");
    assertThat(hook.path("admissionReviewVersions").toString()).isEqualTo("[\"v1\",\"v1beta1\"]");
    assertThat(hook.path("clientConfig").path("service").toString()).isEqualTo("{\"name\":\"hami-scheduler\",\"namespace\":\"kube-system\",\"path\":\"/webhook\",\"port\":443}");
    assertThat(hook.has("objectSelector")).as("the pod label hami.io/webhook=ignore is judged by the webhook").isFalse();
    String condition = hook.path("matchConditions").get(0).path("expression").asString();

    assertThat(matches(condition, pod("limits", "nvidia.com/gpu", "1"))).isTrue();
    assertThat(matches(condition, pod("requests", "nvidia.com/gpumem", "1024"))).isTrue();
    assertThat(matches(condition, pod("limits", "nvidia.com/gpumem-percentage", "50"))).isTrue();
    assertThat(matches(condition, pod("limits", "nvidia.com/priority", "1"))).isTrue();
    assertThat(matches(condition, initPod("nvidia.com/gpucores", "30"))).isTrue();
    assertThat(matches(condition, pod("limits", "cpu", "1"))).isFalse();
    assertThat(matches(condition, Map.of("metadata", Map.of("name", "bare"), "spec", Map.of("containers", List.of(Map.of("name", "c")))))).isFalse();
    // A pod that arrives with the scheduler's annotations or label is sent, so the webhook removes them.
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "hami.io/vgpu-devices-allocated"))).isTrue();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "hami.io/bind-phase"))).isTrue();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "vgpu.io/grant-signature"))).isTrue();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "labels", "hami.io/vgpu-node"))).isTrue();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "example.com/other"))).isFalse();
  }

  @Test
  void withOverwriteEnvEveryPodReachesTheWebhookAndOnlyGpuPodsFailClosed() {
    JsonNode webhooks = RenderedChart.render(Options.defaults().with("scheduler.overwriteEnv", "true")).get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks");
    assertThat(webhooks).hasSize(2);
    assertThat(webhooks.get(1).path("failurePolicy").asString()).isEqualTo("Ignore");
    String gpu = webhooks.get(0).path("matchConditions").get(0).path("expression").asString();
    String rest = webhooks.get(1).path("matchConditions").get(0).path("expression").asString();
    for (Map<String, Object> pod : List.of(pod("limits", "nvidia.com/gpu", "1"), pod("limits", "cpu", "1"), initPod("nvidia.com/gpu", "1"))) {
      assertThat(matches(gpu, pod)).as("exactly one webhook for " + pod).isNotEqualTo(matches(rest, pod));
    }
    assertThat(matches(gpu, pod("limits", "nvidia.com/gpu", "1"))).isTrue();
  }

  /**
   * {@code vgpu.scheduler.placeCpuOnlyPods}: the scheduler gets the flag, pods without GPUs reach a
   * second webhook that fails open, and kube-scheduler sends every pod of the profile to the extender
   * (no managedResources) while its fit filter leaves the vGPU resources to the extender.
   */
  @Test
  void placingCpuOnlyPodsSendsEveryPodToTheExtender() {
    RenderedChart chart = RenderedChart.render(Options.defaults().with("vgpu.scheduler.placeCpuOnlyPods", "true"));
    assertRunnable(chart);
    assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--place-cpu-only-pods");
    assertThat(RenderedChart.args(RenderedChart.defaults().container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).doesNotContain("--place-cpu-only-pods");

    JsonNode webhooks = chart.get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks");
    assertThat(webhooks).hasSize(2);
    assertThat(webhooks.get(0).path("failurePolicy").asString()).isEqualTo("Fail");
    assertThat(webhooks.get(1).path("failurePolicy").asString()).isEqualTo("Ignore");
    String rest = webhooks.get(1).path("matchConditions").get(0).path("expression").asString();
    assertThat(matches(rest, pod("requests", "cpu", "4"))).isTrue();
    assertThat(matches(rest, pod("limits", "nvidia.com/gpu", "1"))).isFalse();

    JsonNode config = YAML.readTree(chart.configMapFile("hami-scheduler", "config.yaml"));
    assertThat(config.path("extenders").get(0).has("managedResources")).isFalse();
    JsonNode profile = config.path("profiles").get(0);
    assertThat(profile.path("schedulerName").asString()).isEqualTo("hami-scheduler");
    assertThat(profile.path("pluginConfig").get(0).path("name").asString()).isEqualTo("NodeResourcesFit");
    assertThat(profile.path("pluginConfig").get(0).path("args").path("ignoredResources").toString())
        .isEqualTo("[\"nvidia.com/gpu\",\"nvidia.com/gpumem\",\"nvidia.com/gpucores\",\"nvidia.com/gpumem-percentage\",\"nvidia.com/priority\"]");
    JsonNode defaults = YAML.readTree(RenderedChart.defaults().configMapFile("hami-scheduler", "config.yaml"));
    assertThat(defaults.path("profiles").get(0).has("pluginConfig")).isFalse();
    assertThat(defaults.path("extenders").get(0).path("managedResources")).hasSize(5);
  }

  private static Map<String, Object> pod(String section, String resource, String quantity) {
    return Map.of("metadata", Map.of("name", "p"), "spec", Map.of("containers", List.of(Map.of("name", "c", "resources", Map.of(section, Map.of(resource, quantity))))));
  }

  private static Map<String, Object> initPod(String resource, String quantity) {
    return Map.of("metadata", Map.of("name", "p"), "spec", Map.of(
        "initContainers", List.of(Map.of("name", "i", "resources", Map.of("limits", Map.of(resource, quantity)))),
        "containers", List.of(Map.of("name", "c"))));
  }

  private static Map<String, Object> withMetadata(Map<String, Object> pod, String field, String key) {
    return Map.of("metadata", Map.of("name", "p", field, Map.of(key, "x")), "spec", pod.get("spec"));
  }

  /** Evaluates a webhook match condition as the API server does, with the pod as {@code object}. */
  static boolean matches(String expression, Map<String, Object> pod) {
    try {
      CelCompiler compiler = CelCompilerFactory.standardCelCompilerBuilder().setStandardMacros(CelStandardMacro.STANDARD_MACROS).addVar("object", SimpleType.DYN).build();
      CelAbstractSyntaxTree ast = compiler.compile(expression).getAst();
      CelRuntime runtime = CelRuntimeFactory.standardCelRuntimeBuilder().build();
      return (Boolean) runtime.createProgram(ast).eval(Map.of("object", pod));
    } catch (Exception e) {
      throw new AssertionError("CEL: " + e.getMessage(), e);
    }
  }

  @Test
  void hamisValuesFileInstallsUnchangedAndItsSettingsReachTheComponents() throws Exception {
    RenderedChart chart = RenderedChart.render(Options.defaults().values(RenderedChart.HAMI_VALUES));
    assertRunnable(chart);
    // HAMi's defaults: NodePorts 31998 (webhook), 31993 (scheduler metrics), 31992 (node metrics).
    JsonNode scheduler = chart.get("Service", "hami-scheduler").path("spec");
    assertThat(scheduler.path("type").asString()).isEqualTo("NodePort");
    assertThat(scheduler.path("ports").get(0).path("nodePort").asInt()).isEqualTo(31998);
    assertThat(scheduler.path("ports").get(1).path("nodePort").asInt()).isEqualTo(31993);
    assertThat(chart.get("Service", "hami-device-plugin-monitor").path("spec").path("ports").get(0).path("nodePort").asInt()).isEqualTo(31992);
    assertThat(chart.get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks").get(0).path("failurePolicy").asString()).isEqualTo("Fail");
    assertThat(readDeviceConfig(chart)).isEqualTo(defaultsExempting("kube-system"));
    List<String> args = RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"));
    assertThat(args).contains("--scheduler-name=hami-scheduler", "--node-scheduler-policy=binpack", "--gpu-scheduler-policy=spread", "--metrics-bind-address=:9395",
        "--leader-elect-resource-name=hami-scheduler", "--node-lock-timeout=5m");
    assertThat(args).doesNotContain("-v=4", "--debug");
    assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "kube-scheduler"))).containsExactly("--config=/config/config.yaml", "-v=4");
  }

  @Test
  void hamiSettingsAValuesFileChangesReachTheComponents() throws Exception {
    Path overrides = RenderedChart.valuesFile(dir, "site.yaml", """
        schedulerName: gpu-scheduler
        resourceName: example.com/vgpu
        resourceMem: example.com/vgpu-memory
        resourceCores: example.com/vgpu-cores
        global:
          gpuHookPath: /opt/hook
        scheduler:
          leaderElect: true
          replicas: 2
          metricsBindAddress: ":9500"
          defaultSchedulerPolicy: {nodeSchedulerPolicy: spread, gpuSchedulerPolicy: binpack}
          nodeLabelSelector: {gpu: "on"}
          forceOverwriteDefaultScheduler: false
          nodeLockExpire: 2m
          kubeScheduler:
            image: {registry: mirror.example.com, repository: k8s/kube-scheduler, tag: v1.31.9}
          admissionWebhook:
            whitelistNamespaces: [batch]
        devicePlugin:
          deviceSplitCount: 4
          deviceMemoryScaling: 1.5
          deviceCoreScaling: 2
          runtimeClassName: nvidia
          libPath: /opt/hook/vgpu
          nvidianodeSelector: {accelerator: nvidia}
        devices:
          nvidia: {gpuCorePolicy: force, libCudaLogLevel: 3}
        """);
    RenderedChart chart = RenderedChart.render(Options.defaults().values(RenderedChart.HAMI_VALUES).values(overrides));
    assertRunnable(chart);
    DeviceConfig config = readDeviceConfig(chart);
    assertThat(config.deviceSplitCount()).isEqualTo(4);
    assertThat(config.deviceMemoryScaling()).isEqualTo(1.5);
    assertThat(config.deviceCoreScaling()).isEqualTo(2.0);
    assertThat(config.resourceCountName()).isEqualTo("example.com/vgpu");
    assertThat(config.runtimeClassName()).isEqualTo("nvidia");
    assertThat(config.gpuCorePolicy()).isEqualTo("force");
    assertThat(config.libCudaLogLevel()).isEqualTo("3");
    List<String> args = RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"));
    assertThat(args).contains("--scheduler-name=gpu-scheduler", "--node-scheduler-policy=spread", "--gpu-scheduler-policy=binpack", "--metrics-bind-address=:9500",
        "--node-label-selector=gpu=on", "--force-overwrite-default-scheduler=false", "--node-lock-timeout=2m", "--leader-elect-resource-name=gpu-scheduler");
    assertThat(chart.get("Deployment", "hami-scheduler").path("spec").path("replicas").asInt()).isEqualTo(2);
    assertThat(chart.find("PodDisruptionBudget", "hami-scheduler")).isPresent();
    JsonNode kubeConfig = YAML.readTree(chart.configMapFile("hami-scheduler", "config.yaml"));
    assertThat(kubeConfig.path("profiles").get(0).path("schedulerName").asString()).isEqualTo("gpu-scheduler");
    assertThat(kubeConfig.path("leaderElection").path("resourceName").asString()).isEqualTo("gpu-scheduler");
    assertThat(kubeConfig.path("extenders").get(0).path("managedResources").findValuesAsString("name")).contains("example.com/vgpu", "example.com/vgpu-memory", "example.com/vgpu-cores");
    assertThat(chart.container("Deployment", "hami-scheduler", "kube-scheduler").path("image").asString()).isEqualTo("mirror.example.com/k8s/kube-scheduler:v1.31.9");
    JsonNode hook = chart.get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks").get(0);
    assertThat(matches(hook.path("matchConditions").get(0).path("expression").asString(), pod("limits", "example.com/vgpu", "1"))).isTrue();
    assertThat(hook.path("namespaceSelector").path("matchExpressions").toString()).contains("{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\",\"values\":[\"batch\"]}");
    JsonNode agent = chart.get("DaemonSet", "hami-device-plugin").path("spec").path("template").path("spec");
    assertThat(agent.path("nodeSelector").toString()).isEqualTo("{\"accelerator\":\"nvidia\"}");
    assertThat(agent.path("runtimeClassName").asString()).isEqualTo("nvidia");
    JsonNode container = chart.container("DaemonSet", "hami-device-plugin", "device-plugin");
    assertThat(container.path("env").toString()).contains("{\"name\":\"HOOK_PATH\",\"value\":\"/opt/hook\"}");
    assertThat(mountOf(container, "/opt/hook/vgpu/libvgpu.so")).isNotNull();
    assertThat(chart.find("Role", "hami-kube-scheduler").orElseThrow().path("rules").get(0).path("resourceNames").toString()).isEqualTo("[\"gpu-scheduler\"]");
  }

  /** The rendered device config as vgpu's components read it. */
  static DeviceConfig readDeviceConfig(RenderedChart chart) {
    return readDeviceConfig(chart.configMapFile("hami-scheduler-device", "device-config.yaml"));
  }

  /** A device config file's text as vgpu's components read it. */
  static DeviceConfig readDeviceConfig(String text) {
    try {
      Path file = Files.createTempFile("device-config", ".yaml");
      try {
        Files.writeString(file, text);
        return new DeviceConfigReader(Set.of()).readFile(file);
      } finally {
        Files.delete(file);
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** HAMi's defaults, with the watchdog leaving the pods of these namespaces alone. */
  static DeviceConfig defaultsExempting(String... namespaces) {
    return readDeviceConfig("nvidia:\n  watchdog:\n    exemptNamespaces: [" + String.join(", ", namespaces) + "]\n");
  }

  /**
   * The watchdog holds a pod without a grant to a grant of 0 (vgpu.watchdog.ungranted.action, kill by
   * default) and never acts on pods of the release's namespace, nor of those vgpu.watchdog.exemptNamespaces
   * lists after it.
   */
  @Test
  void theWatchdogKillsUngrantedUseOutsideTheReleaseNamespaceAndTheListedOnes() {
    JsonNode defaults = YAML.readTree(RenderedChart.defaults().configMapFile("hami-scheduler-device", "device-config.yaml")).path("nvidia").path("watchdog");
    assertThat(defaults.path("ungranted").toString()).isEqualTo("{\"action\":\"kill\"}");
    assertThat(defaults.path("exemptNamespaces").toString()).isEqualTo("[\"kube-system\"]");

    RenderedChart chart = RenderedChart.render(Options.defaults().with("vgpu.watchdog.ungranted.action", "report")
        .with("vgpu.watchdog.exemptNamespaces[0]", "monitoring").with("vgpu.watchdog.exemptNamespaces[1]", "kube-system"));
    JsonNode watchdog = YAML.readTree(chart.configMapFile("hami-scheduler-device", "device-config.yaml")).path("nvidia").path("watchdog");
    assertThat(watchdog.path("ungranted").toString()).isEqualTo("{\"action\":\"report\"}");
    assertThat(watchdog.path("exemptNamespaces").toString()).isEqualTo("[\"kube-system\",\"monitoring\"]");
    // ... and vgpu's reader reads them as they were meant.
    assertThat(readDeviceConfig(RenderedChart.defaults())).isEqualTo(defaultsExempting("kube-system"));
    assertThat(readDeviceConfig(chart)).isEqualTo(readDeviceConfig("nvidia:\n  watchdog:\n    ungranted: {action: report}\n    exemptNamespaces: [kube-system, monitoring]\n"));

    assertThat(RenderedChart.failure(Options.defaults().with("vgpu.watchdog.ungranted.action", "ignore"))).get().asString().contains("ungranted");
    assertThat(RenderedChart.failure(Options.defaults().with("vgpu.watchdog.exemptNamespaces[0]", "Team_A"))).get().asString().contains("exemptNamespaces");
  }

  @Test
  void hamisKeysThatWouldUndoVgpusFixesAreOverriddenEachWithANote() {
    String notes = RenderedChart.notes(Options.defaults().values(RenderedChart.HAMI_VALUES));
    assertThat(notes).contains(
        "- scheduler.extender.image: HAMi's image; vgpu runs its own image (image.*) in every container.",
        "- devicePlugin.image: HAMi's image;",
        "- global.imageTag=v2.10.0: the tag of HAMi's image; vgpu's is image.tag (0.1.0).",
        "- scheduler.admissionWebhook.failurePolicy=Ignore: pods asking for GPUs stay Fail",
        "- scheduler.patch.*: no certgen hook jobs;",
        "- scheduler.extender.extraArgs=[\"--debug\",\"-v=4\"]: flags of HAMi's binary; ignored");
    RenderedChart chart = RenderedChart.render(Options.defaults().values(RenderedChart.HAMI_VALUES));
    for (Document d : chart.all("Deployment")) {
      assertThat(d.yaml()).doesNotContain("projecthami", "certgen");
    }
    assertThat(RenderedChart.notes(Options.defaults())).contains("Settings of HAMi's chart that vgpu does not follow:\n  (none)");
  }

  @Test
  void aKeyNeitherHamisNorVgpusFailsTheInstall() {
    assertThat(RenderedChart.failure(Options.defaults().with("scheduler.admissionWebhook.failurePolicies", "Fail")))
        .get().asString().contains("additional properties 'failurePolicies' not allowed");
    assertThat(RenderedChart.failure(Options.defaults().with("vgpu.watchdog.action", "pause"))).get().asString().contains("watchdog");
    // Other vendors' keys are accepted and ignored.
    assertThat(RenderedChart.failure(Options.defaults().with("iluvatarResourceName", "iluvatar.ai/vgpu").with("devices.cambricon.enabled", "true"))).isEmpty();
  }

  @Test
  void settingsThatCannotWorkTogetherFailWithOneLine() {
    assertThat(RenderedChart.failure(Options.defaults().with("devicePlugin.libPath", "/opt/vgpu")))
        .get().asString().contains("devicePlugin.libPath (/opt/vgpu) must be global.gpuHookPath/vgpu (/usr/local/vgpu)");
    assertThat(RenderedChart.failure(Options.defaults().with("scheduler.kubeScheduler.enabled", "false")))
        .get().asString().contains("give vgpu.extender.clientCASecret");
  }

  // --- vgpu as the isolation layer under KAI Scheduler (vgpu.kai.enabled=true)

  /**
   * The KAI role's objects run. The node agent's args (--stack=kai, --pod-resources-socket) are the
   * contract of issue 20 and checked as strings here; they parse once the node agent's flags are merged.
   */
  @Test
  void inTheKaiRoleTheSchedulerServesOnlyTheWebhookAndTheNodeAgentRunsUnderKai() {
    RenderedChart chart = RenderedChart.kai();
    assertRunnable(chart);
    JsonNode pod = chart.get("Deployment", "hami-scheduler").path("spec").path("template").path("spec");
    assertThat(pod.path("containers")).hasSize(1);
    JsonNode scheduler = chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender");
    assertThat(RenderedChart.args(scheduler)).containsExactly("scheduler", "--stack=kai", "--http_bind=0.0.0.0:9443", "--cert_file=/tls/tls.crt",
        "--key_file=/tls/tls.key", "--metrics-bind-address=:9395", "--hook-path=/usr/local");
    assertThat(chart.find("ConfigMap", "hami-scheduler")).as("no KubeSchedulerConfiguration").isEmpty();
    assertThat(chart.manifest()).doesNotContain("KubeSchedulerConfiguration").doesNotContain("--grant-key-secret").doesNotContain("--extender-bind-address");
    assertThat(chart.get("Deployment", "hami-scheduler").path("spec").has("strategy")).as("every replica is ready: a rolling update works").isFalse();
    assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "certificates"))).contains("--webhook=hami-webhook");

    JsonNode agent = chart.container("DaemonSet", "hami-device-plugin", "device-plugin");
    List<String> args = RenderedChart.args(agent);
    assertThat(args).containsExactly("device-plugin", "--device-config-file=/device-config/device-config.yaml", "--device-plugin-dir=/var/lib/kubelet/device-plugins",
        "--metrics-bind-address=:9394", "--stack=kai", "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock");
    assertThat(mountOf(agent, "/var/lib/kubelet/pod-resources/kubelet.sock").toString()).isEqualTo("{\"name\":\"pod-resources\",\"mountPath\":\"/var/lib/kubelet/pod-resources\",\"readOnly\":true}");
    // The agent writes the grant directories and the per-container regions under the hook directory it mounts.
    for (String dir : List.of("/usr/local/vgpu/kai", "/usr/local/vgpu/containers")) {
      JsonNode mount = mountOf(agent, dir);
      assertThat(mount).as(dir).isNotNull();
      assertThat(mount.path("readOnly").asBoolean(false)).as(dir).isFalse();
    }
    String volumes = chart.get("DaemonSet", "hami-device-plugin").path("spec").path("template").path("spec").path("volumes").toString();
    assertThat(volumes).contains("{\"name\":\"pod-resources\",\"hostPath\":{\"path\":\"/var/lib/kubelet/pod-resources\",\"type\":\"Directory\"}}")
        .contains("{\"name\":\"hook\",\"hostPath\":{\"path\":\"/usr/local/vgpu\",\"type\":\"DirectoryOrCreate\"}}");

    List<String> kinds = new ArrayList<>();
    chart.documents().forEach(d -> kinds.add(d.kind() + "/" + d.name()));
    assertThat(kinds).containsExactlyInAnyOrder(
        "ServiceAccount/hami-scheduler", "ServiceAccount/hami-device-plugin",
        "ClusterRole/hami-scheduler", "ClusterRoleBinding/hami-scheduler", "Role/hami-scheduler", "RoleBinding/hami-scheduler",
        "ClusterRole/hami-device-plugin", "ClusterRoleBinding/hami-device-plugin",
        "ValidatingAdmissionPolicy/hami-node-agent", "ValidatingAdmissionPolicyBinding/hami-node-agent",
        "ValidatingAdmissionPolicy/hami-kai-bindrequests", "ValidatingAdmissionPolicyBinding/hami-kai-bindrequests",
        "ValidatingAdmissionPolicy/hami-kai-sharing", "ValidatingAdmissionPolicyBinding/hami-kai-sharing",
        "ConfigMap/hami-scheduler-device",
        "Service/hami-scheduler", "Service/hami-device-plugin-monitor",
        "Deployment/hami-scheduler", "DaemonSet/hami-device-plugin", "MutatingWebhookConfiguration/hami-webhook");
  }

  @Test
  void inTheKaiRoleTheWebhookFailsClosedForThePodsKaiSharesAndSeesNoOther() {
    JsonNode webhooks = RenderedChart.kai().get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks");
    assertThat(webhooks).hasSize(1);
    JsonNode hook = webhooks.get(0);
    assertThat(hook.path("name").asString()).isEqualTo("vgpu-kai.hami.io");
    assertThat(hook.path("failurePolicy").asString()).isEqualTo("Fail");
    assertThat(hook.path("reinvocationPolicy").asString()).isEqualTo("IfNeeded");
    assertThat(hook.path("rules").toString()).isEqualTo("[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"],\"scope\":\"*\"}]");
    assertThat(hook.path("matchConditions")).hasSize(1);
    // A namespace labelled hami.io/webhook=ignore is no way around it (KAI would share its pods unisolated);
    // the namespaces an administrator lists in the values are.
    assertThat(hook.has("namespaceSelector")).isFalse();
    JsonNode listed = RenderedChart.render(Options.kai().with("scheduler.admissionWebhook.whitelistNamespaces[0]", "kube-system"))
        .get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks").get(0);
    assertThat(listed.path("namespaceSelector").toString())
        .isEqualTo("{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\",\"values\":[\"kube-system\"]}]}");
    String condition = hook.path("matchConditions").get(0).path("expression").asString();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "gpu-memory"))).isTrue();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "gpu-fraction"))).isTrue();
    // KAI's whole-card and reservation pods, vgpu's own resource names and HAMi's annotations: not vgpu's business here.
    assertThat(matches(condition, pod("limits", "nvidia.com/gpu", "1"))).isFalse();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "gpu-fraction-num-devices"))).isFalse();
    assertThat(matches(condition, withMetadata(pod("limits", "cpu", "1"), "annotations", "hami.io/vgpu-devices-allocated"))).isFalse();
    assertThat(matches(condition, Map.of("metadata", Map.of("name", "bare"), "spec", Map.of("containers", List.of(Map.of("name", "c")))))).isFalse();
  }

  @Test
  void inTheKaiRoleTheHookPathReachesTheWebhookAndTheSettingsThatCannotWorkFail() {
    RenderedChart hook = RenderedChart.render(Options.kai().with("global.gpuHookPath", "/opt/hook").with("devicePlugin.libPath", "/opt/hook/vgpu"));
    assertThat(RenderedChart.args(hook.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--hook-path=/opt/hook");
    assertThat(ChartTest.mountOf(hook.container("DaemonSet", "hami-device-plugin", "device-plugin"), "/opt/hook/vgpu/kai")).isNotNull();
    // No extender, so no client certificate to require without kube-scheduler.
    assertThat(RenderedChart.failure(Options.kai().with("scheduler.kubeScheduler.enabled", "false"))).isEmpty();
    assertThat(RenderedChart.failure(Options.kai().with("scheduler.admissionWebhook.enabled", "false"))).get().asString()
        .contains("vgpu.kai.enabled needs scheduler.admissionWebhook.enabled: without vgpu's webhook the pods KAI shares run without vgpu's limits");
    assertThat(RenderedChart.notes(Options.kai())).contains("is installed as \"hami\" in kube-system.\n\n  role:        the isolation layer under KAI Scheduler")
        .contains("webhook:     hami-webhook, failurePolicy Fail for pods with annotation gpu-fraction or gpu-memory")
        .doesNotContain("kube-scheduler registry");
    assertThat(RenderedChart.notes(Options.defaults())).contains("is installed as \"hami\" in kube-system.\n\n  scheduler:   Deployment hami-scheduler (kube-scheduler registry");
    // The webhook-only scheduler has no metrics to scrape; the node agent's are scraped as in the HAMi role.
    RenderedChart prometheus = RenderedChart.render(Options.kai().with("prometheus.enabled", "true"));
    assertThat(prometheus.all("ServiceMonitor")).hasSize(1);
    assertThat(prometheus.all("ServiceMonitor").get(0).template()).startsWith("device-plugin/");
    // Every replica answers.
    assertThat(RenderedChart.render(Options.kai().with("scheduler.replicas", "3")).get("Deployment", "hami-scheduler").path("spec").path("replicas").asInt()).isEqualTo(3);
  }

  static Stream<Arguments> overrides() {
    return Stream.of(
        override("cert-manager", Options.defaults().with("vgpu.certificates.source", "cert-manager"), chart -> {
          assertThat(chart.get("Certificate", "hami-scheduler-serving-cert").path("spec").path("secretName").asString()).isEqualTo("hami-scheduler-tls");
          assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "certificates"))).containsExactly("certificates", "--client-dir=/client-tls");
          assertThat(chart.get("Role", "hami-scheduler").toString()).doesNotContain("hami-scheduler-tls");
          assertThat(chart.get("ClusterRole", "hami-scheduler").toString()).doesNotContain("mutatingwebhookconfigurations");
        }),
        override("HAMi's certManager.enabled", Options.defaults().with("scheduler.certManager.enabled", "true"), chart ->
            assertThat(chart.find("Issuer", "hami-scheduler-selfsigned-issuer")).isPresent()),
        override("without leader election", Options.defaults().with("scheduler.leaderElect", "false").with("scheduler.replicas", "3"), chart -> {
          assertThat(chart.get("Deployment", "hami-scheduler").path("spec").path("replicas").asInt()).isEqualTo(1);
          assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).doesNotContain("--leader-elect");
        }),
        override("webhook off", Options.defaults().with("scheduler.admissionWebhook.enabled", "false"), chart -> {
          assertThat(chart.all("MutatingWebhookConfiguration")).isEmpty();
          assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "certificates"))).noneMatch(a -> a.startsWith("--webhook"));
        }),
        override("custom URL", Options.defaults().with("scheduler.admissionWebhook.customURL.enabled", "true").with("scheduler.admissionWebhook.customURL.host", "10.0.0.7"), chart -> {
          assertThat(chart.get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks").get(0).path("clientConfig").path("url").asString()).isEqualTo("https://10.0.0.7:31998/webhook");
          assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "certificates"))).contains("--ip-address=10.0.0.7");
        }),
        override("no kube-scheduler sidecar", Options.defaults().with("scheduler.kubeScheduler.enabled", "false").with("vgpu.extender.clientCASecret", "my-scheduler-ca"), chart -> {
          List<String> args = RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"));
          assertThat(args).contains("--client-ca-file=/extender-client-ca/ca.crt").noneMatch(a -> a.startsWith("--extender-bind-address") || a.startsWith("--leader-elect"));
          assertThat(chart.find("ConfigMap", "hami-scheduler")).isEmpty();
        }),
        override("open extender", Options.defaults().with("vgpu.extender.requireClientCertificate", "false"), chart -> {
          assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).noneMatch(a -> a.startsWith("--client-ca-file"));
          assertThat(chart.configMapFile("hami-scheduler", "config.yaml")).doesNotContain("certFile");
        }),
        override("webhook client CA", Options.defaults().with("vgpu.webhook.clientCASecret", "apiserver-ca"), chart ->
            assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--webhook-client-ca-file=/webhook-client-ca/ca.crt")),
        override("mirror and pull secrets", Options.defaults().with("global.imageRegistry", "mirror.example.com").with("global.imagePullSecrets[0]", "regcred").with("image.tag", "dev"), chart -> {
          assertThat(chart.container("DaemonSet", "hami-device-plugin", "device-plugin").path("image").asString()).isEqualTo("mirror.example.com/vgpu:dev");
          assertThat(chart.container("Deployment", "hami-scheduler", "kube-scheduler").path("image").asString()).isEqualTo("mirror.example.com/kube-scheduler:v1.31.0");
          assertThat(chart.get("DaemonSet", "hami-device-plugin").path("spec").path("template").path("spec").path("imagePullSecrets").toString()).isEqualTo("[{\"name\":\"regcred\"}]");
        }),
        override("runtime class", Options.defaults().with("devicePlugin.runtimeClassName", "nvidia").with("devicePlugin.createRuntimeClass", "true"), chart ->
            assertThat(chart.get("RuntimeClass", "nvidia").path("handler").asString()).isEqualTo("nvidia")),
        override("prometheus", Options.defaults().with("prometheus.enabled", "true").with("legacyMetrics", "true"), chart -> {
          assertThat(chart.all("ServiceMonitor")).hasSize(2);
          assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--legacy-metrics");
        }),
        override("device-config content", Options.defaults().with("device-config.content", "nvidia:\n  deviceSplitCount: 3\n"), chart ->
            assertThat(chart.configMapFile("hami-scheduler-device", "device-config.yaml")).isEqualTo("nvidia:\n  deviceSplitCount: 3\n")),
        override("watchdog and namespaces", Options.defaults().with("vgpu.watchdog.action", "report").with("vgpu.watchdog.toleranceMiB", "256")
            .with("vgpu.watchdog.ungranted.action", "report").with("vgpu.watchdog.exemptNamespaces[0]", "monitoring")
            .with("vgpu.disableControlNamespaces[0]", "trusted").with("vgpu.webhookIgnoreLabelNamespaces[0]", "infra"), chart -> {
          DeviceConfig config = readDeviceConfig(chart);
          assertThat(config.watchdog().action()).isEqualTo(WatchdogConfig.Action.REPORT);
          assertThat(config.watchdog().toleranceMiB()).isEqualTo(256);
          assertThat(config.watchdog().pollInterval()).isEqualTo(Duration.ofSeconds(1));
          assertThat(config.disableControlNamespaces()).containsExactly("trusted");
          assertThat(config.webhookIgnoreLabelNamespaces()).containsExactly("infra");
          assertThat(config).isEqualTo(readDeviceConfig("""
              nvidia:
                watchdog: {action: report, toleranceMiB: 256, ungranted: {action: report}, exemptNamespaces: [kube-system, monitoring]}
                disableControlNamespaces: [trusted]
                webhookIgnoreLabelNamespaces: [infra]
              """));
        }),
        override("device plugin off", Options.defaults().with("devicePlugin.enabled", "false"), chart -> assertThat(chart.all("DaemonSet")).isEmpty()),
        override("another release name", Options.defaults().named("gpu"), chart -> {
          assertThat(chart.find("Deployment", "gpu-hami-scheduler")).isPresent();
          assertThat(chart.get("MutatingWebhookConfiguration", "gpu-hami-webhook").path("webhooks").get(0).path("clientConfig").path("service").path("name").asString())
              .isEqualTo("gpu-hami-scheduler");
        }),
        override("Kubernetes 1.30", Options.defaults().kube("v1.30.0"), chart ->
            assertThat(chart.container("Deployment", "hami-scheduler", "kube-scheduler").path("image").asString()).endsWith(":v1.30.0")));
  }

  private static Arguments override(String name, Options options, Consumer<RenderedChart> check) {
    return Arguments.of(name, options, check);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("overrides")
  void commonOverridesRenderObjectsThatRun(String name, Options options, Consumer<RenderedChart> check) {
    RenderedChart chart = RenderedChart.render(options);
    assertRunnable(chart);
    check.accept(chart);
  }

  /**
   * cert-manager mode: a self-signed Issuer makes only the release's CA, a CA Issuer signs the serving
   * certificate with it, and what checks the serving certificate trusts the CA: kube-scheduler's caFile
   * is the serving Secret's ca.crt (a CA Issuer writes the CA there) and cainjector fills the webhook's
   * caBundle from the CA Certificate. A renewed serving certificate then chains to what both read once
   * (ServingCertificateRenewalTest in vgpu-k8s shows it over TLS). Before, the self-signed Issuer signed
   * the serving certificate itself: ca.crt was that certificate, and the first renewal broke the trust.
   */
  @Test
  void withCertManagerTheServingCertificateIsSignedByACaThatKubeSchedulerAndTheWebhookTrust() {
    RenderedChart chart = RenderedChart.render(Options.defaults().with("vgpu.certificates.source", "cert-manager"));
    assertThat(chart.all("Issuer").stream().map(Document::name)).containsExactlyInAnyOrder("hami-scheduler-selfsigned-issuer", "hami-scheduler-ca-issuer");
    assertThat(chart.all("Certificate").stream().map(Document::name)).containsExactlyInAnyOrder("hami-scheduler-ca", "hami-scheduler-serving-cert");
    assertThat(chart.get("Issuer", "hami-scheduler-selfsigned-issuer").path("spec").has("selfSigned")).isTrue();

    JsonNode ca = chart.get("Certificate", "hami-scheduler-ca").path("spec");
    assertThat(ca.path("isCA").asBoolean()).isTrue();
    assertThat(ca.path("issuerRef").toString()).isEqualTo("{\"name\":\"hami-scheduler-selfsigned-issuer\",\"kind\":\"Issuer\"}");
    // Renewing the CA keeps its key, so certificates signed after still chain to the CA read before.
    assertThat(ca.path("privateKey").path("rotationPolicy").asString()).isEqualTo("Never");
    assertThat(Duration.parse("PT" + ca.path("duration").asString().toUpperCase())).isGreaterThanOrEqualTo(Duration.ofDays(3650));
    assertThat(chart.get("Issuer", "hami-scheduler-ca-issuer").path("spec").path("ca").path("secretName").asString()).isEqualTo(ca.path("secretName").asString());

    JsonNode serving = chart.get("Certificate", "hami-scheduler-serving-cert").path("spec");
    assertThat(serving.path("isCA").asBoolean(false)).isFalse();
    assertThat(serving.path("issuerRef").toString()).isEqualTo("{\"name\":\"hami-scheduler-ca-issuer\",\"kind\":\"Issuer\"}");
    for (Document certificate : chart.all("Certificate")) {
      if (certificate.tree().path("spec").path("issuerRef").path("name").asString().equals("hami-scheduler-selfsigned-issuer")) {
        assertThat(certificate.tree().path("spec").path("isCA").asBoolean(false)).as(certificate.name() + ": the self-signed Issuer makes only the CA").isTrue();
      }
    }

    // The pod serves the serving Secret and kube-scheduler trusts the ca.crt beside it.
    JsonNode pod = chart.get("Deployment", "hami-scheduler").path("spec").path("template").path("spec");
    JsonNode extender = chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender");
    JsonNode kubeScheduler = chart.container("Deployment", "hami-scheduler", "kube-scheduler");
    JsonNode tls = YAML.readTree(chart.configMapFile("hami-scheduler", "config.yaml")).path("extenders").get(0).path("tlsConfig");
    assertThat(tls.path("caFile").asString()).isEqualTo("/tls/ca.crt");
    assertThat(volumeOf(pod, mountOf(kubeScheduler, "/tls/ca.crt").path("name").asString()).path("secret").path("secretName").asString()).isEqualTo(serving.path("secretName").asString());
    String certFile = RenderedChart.flag(RenderedChart.args(extender), "--cert_file").orElseThrow();
    assertThat(volumeOf(pod, mountOf(extender, certFile).path("name").asString()).path("secret").path("secretName").asString()).isEqualTo("hami-scheduler-tls");
    assertThat(serving.path("secretName").asString()).isEqualTo("hami-scheduler-tls");
    assertThat(serving.path("dnsNames").toString()).contains("\"" + tls.path("serverName").asString() + "\"");
    // cainjector writes the CA Certificate's CA into the webhook's caBundle.
    assertThat(chart.get("MutatingWebhookConfiguration", "hami-webhook").path("metadata").path("annotations").path("cert-manager.io/inject-ca-from").asString())
        .isEqualTo("kube-system/hami-scheduler-ca");
  }

  /**
   * The scheduler's pod is ready only while it leads, and the old pod holds kube-scheduler's Lease until
   * it stops: a RollingUpdate would wait for a ready new pod forever, so the Deployment is Recreate.
   */
  @Test
  void theSchedulerDeploymentIsReplacedNotRolled() {
    for (Options options : List.of(Options.defaults(), Options.defaults().with("scheduler.replicas", "2"), Options.defaults().values(RenderedChart.HAMI_VALUES))) {
      RenderedChart chart = RenderedChart.render(options);
      assertThat(chart.get("Deployment", "hami-scheduler").path("spec").path("strategy").toString()).isEqualTo("{\"type\":\"Recreate\"}");
      assertThat(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender").path("readinessProbe").path("httpGet").path("path").asString()).isEqualTo("/readyz");
    }
  }

  /**
   * The extender's metrics port (and with it {@code /healthz}) opens after the informers' sync, which may
   * take up to {@code --sync-timeout} (2 min by default), and the warm-up (at most 20 s, its wait for the
   * JIT included): a startup probe holds liveness off for longer than that, with room to spare, so that a
   * slow start on a large cluster is not restarted before it ever serves.
   */
  @Test
  void livenessWaitsForTheExtendersStart() {
    JsonNode container = RenderedChart.defaults().container("Deployment", "hami-scheduler", "vgpu-scheduler-extender");
    JsonNode startup = container.path("startupProbe");
    assertThat(startup.path("httpGet").path("path").asString()).isEqualTo("/healthz");
    assertThat(startup.path("httpGet").path("port").asInt()).isEqualTo(container.path("livenessProbe").path("httpGet").path("port").asInt());
    assertThat(RenderedChart.args(container).stream().filter(a -> a.startsWith("--sync-timeout"))).as("the chart leaves --sync-timeout at 2m").isEmpty();
    assertThat(startup.path("periodSeconds").asInt() * startup.path("failureThreshold").asInt()).isGreaterThan(120 + 20);
  }

  /** A bind waits for a contended node lock 2 s less than kube-scheduler waits for the bind, unless told otherwise. */
  @Test
  void aBindWaitsForTheNodeLockLessThanKubeSchedulerWaitsForIt() {
    for (int timeout : List.of(30, 60, 3)) {
      RenderedChart chart = RenderedChart.render(Options.defaults().with("scheduler.extenderHTTPTimeout", String.valueOf(timeout)));
      assertRunnable(chart);
      assertThat(RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--node-lock-retry-timeout=" + (timeout - 2) + "s");
      assertThat(YAML.readTree(chart.configMapFile("hami-scheduler", "config.yaml")).path("extenders").get(0).path("httpTimeout").asString()).isEqualTo(timeout + "s");
    }
    assertThat(RenderedChart.args(RenderedChart.defaults().container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--node-lock-retry-timeout=28s");
    for (String given : List.of("10", "45s")) {
      List<String> args = RenderedChart.args(RenderedChart.render(Options.defaults().with("scheduler.nodeLockRetryTimeout", given)).container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"));
      assertThat(args.stream().filter(a -> a.startsWith("--node-lock-retry-timeout="))).containsExactly("--node-lock-retry-timeout=" + (given.endsWith("s") ? given : given + "s"));
    }
    assertThat(RenderedChart.failure(Options.defaults().with("scheduler.extenderHTTPTimeout", "2"))).get().asString().contains("extenderHTTPTimeout");
  }

  /**
   * The scheduler signs each grant with the key in one Secret of the release's namespace and every node
   * agent verifies with it: both containers name the same Secret, and each component's Role may read it
   * by that name.
   */
  @Test
  void theSchedulerAndTheNodeAgentShareTheGrantKeySecret() {
    for (Options options : List.of(Options.defaults(), Options.defaults().named("gpu"))) {
      RenderedChart chart = RenderedChart.render(options);
      String scheduler = options.release().equals("gpu") ? "gpu-hami-scheduler" : "hami-scheduler";
      String agent = options.release().equals("gpu") ? "gpu-hami-device-plugin" : "hami-device-plugin";
      String secret = RenderedChart.flag(RenderedChart.args(chart.container("Deployment", scheduler, "vgpu-scheduler-extender")), "--grant-key-secret").orElseThrow();
      assertThat(secret).isEqualTo("kube-system/" + scheduler + "-grant-key");
      assertThat(RenderedChart.flag(RenderedChart.args(chart.container("DaemonSet", agent, "device-plugin")), "--grant-key-secret")).contains(secret);
      String name = secret.substring(secret.indexOf('/') + 1);
      assertThat(chart.get("Role", scheduler).path("rules").findValues("resourceNames").toString()).contains("\"" + name + "\"");
      assertThat(chart.get("Role", agent).path("rules").get(0).path("resourceNames").toString()).isEqualTo("[\"" + name + "\"]");
      assertThat(chart.get("Role", agent).path("metadata").path("namespace").asString()).isEqualTo(secret.substring(0, secret.indexOf('/')));
    }
  }

  @Test
  void renderedObjectsAreTheOnlyOnesTheTemplatesMake() {
    List<String> kinds = new ArrayList<>();
    RenderedChart.defaults().documents().forEach(d -> kinds.add(d.kind() + "/" + d.name()));
    assertThat(kinds).containsExactlyInAnyOrder(
        "ServiceAccount/hami-scheduler", "ServiceAccount/hami-device-plugin",
        "ClusterRole/hami-scheduler", "ClusterRoleBinding/hami-scheduler", "Role/hami-scheduler", "RoleBinding/hami-scheduler",
        "Role/hami-kube-scheduler", "RoleBinding/hami-kube-scheduler",
        "ClusterRoleBinding/hami-scheduler-kube-scheduler", "ClusterRoleBinding/hami-scheduler-volume-scheduler",
        "ClusterRole/hami-device-plugin", "ClusterRoleBinding/hami-device-plugin", "Role/hami-device-plugin", "RoleBinding/hami-device-plugin",
        "ValidatingAdmissionPolicy/hami-scheduler-owned", "ValidatingAdmissionPolicyBinding/hami-scheduler-owned",
        "ValidatingAdmissionPolicy/hami-node-agent", "ValidatingAdmissionPolicyBinding/hami-node-agent",
        "ConfigMap/hami-scheduler", "ConfigMap/hami-scheduler-device",
        "Service/hami-scheduler", "Service/hami-device-plugin-monitor",
        "Deployment/hami-scheduler", "DaemonSet/hami-device-plugin", "MutatingWebhookConfiguration/hami-webhook");
  }

  // --- KAI's pod dialect scheduled by vgpu (vgpu.kaiDialect.enabled=true)

  @Test
  void kubeSchedulerLooksAtEveryFeasibleNodeSoTheExtenderChoosesAmongThemAll() {
    for (RenderedChart chart : List.of(RenderedChart.defaults(), RenderedChart.kaiDialect(), RenderedChart.render(Options.defaults().values(RenderedChart.HAMI_VALUES)))) {
      JsonNode config = YAML.readTree(chart.configMapFile("hami-scheduler", "config.yaml"));
      assertThat(config.path("percentageOfNodesToScore").asInt(-1)).isEqualTo(100);
      assertThat(config.path("profiles").get(0).has("percentageOfNodesToScore")).as("no profile narrows it").isFalse();
    }
  }

  @Test
  void withTheKaiDialectTheSchedulerTakesKaisPodsAndFollowsTheirQueuesAndGangs() {
    RenderedChart chart = RenderedChart.kaiDialect();
    assertRunnable(chart);
    List<String> args = RenderedChart.args(chart.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"));
    assertThat(args).contains("--kai-dialect", "--kai-scheduler-name=kai-scheduler", "--gang-hold-timeout=60s");
    RenderedChart named = RenderedChart.render(Options.kaiDialect().with("vgpu.kaiDialect.schedulerName", "kai").with("vgpu.kaiDialect.gangHoldTimeout", "2m"));
    assertThat(RenderedChart.args(named.container("Deployment", "hami-scheduler", "vgpu-scheduler-extender"))).contains("--kai-scheduler-name=kai", "--gang-hold-timeout=2m");
    assertThat(RenderedChart.defaults().manifest()).doesNotContain("--kai-dialect").doesNotContain("scheduling.run.ai").doesNotContain("hami-kai-dialect");

    // The webhook sees KAI's pods: a fraction pod asks for no resource before the webhook gives it one.
    String condition = chart.get("MutatingWebhookConfiguration", "hami-webhook").path("webhooks").get(0).path("matchConditions").get(0).path("expression").asString();
    Map<String, Object> kaiPod = Map.of("metadata", Map.of("name", "p", "annotations", Map.of("gpu-fraction", "0.5")),
        "spec", Map.of("schedulerName", "kai-scheduler", "containers", List.of(Map.of("name", "c"))));
    Map<String, Object> otherPod = Map.of("metadata", Map.of("name", "p"), "spec", Map.of("schedulerName", "other", "containers", List.of(Map.of("name", "c"))));
    assertThat(matches(condition, kaiPod)).isTrue();
    assertThat(matches(condition, otherPod)).isFalse();
    assertThat(matches(condition, pod("limits", "nvidia.com/gpu", "1"))).isTrue();

    // It follows Queues and PodGroups, no verb more than its informers use.
    String rules = chart.get("ClusterRole", "hami-scheduler").path("rules").toString();
    assertThat(rules).contains("{\"apiGroups\":[\"scheduling.run.ai\"],\"resources\":[\"queues\",\"podgroups\"],\"verbs\":[\"list\",\"watch\"]}");

    // KAI's CRDs only when asked for (a cluster with KAI has its own).
    assertThat(chart.get("CustomResourceDefinition", "queues.scheduling.run.ai").path("spec").path("scope").asString()).isEqualTo("Cluster");
    JsonNode queue = chart.get("CustomResourceDefinition", "queues.scheduling.run.ai").path("spec").path("versions").get(0);
    assertThat(queue.path("name").asString()).isEqualTo("v2");
    assertThat(queue.path("schema").path("openAPIV3Schema").path("properties").path("spec").path("properties").path("resources").path("properties").path("gpu").toString())
        .isEqualTo("{\"properties\":{\"limit\":{\"type\":\"number\"},\"overQuotaWeight\":{\"type\":\"number\"},\"quota\":{\"type\":\"number\"}},\"type\":\"object\"}");
    JsonNode podGroup = chart.get("CustomResourceDefinition", "podgroups.scheduling.run.ai").path("spec");
    assertThat(podGroup.path("scope").asString()).isEqualTo("Namespaced");
    assertThat(podGroup.path("versions").get(0).path("name").asString()).isEqualTo("v2alpha2");
    RenderedChart withoutCrds = RenderedChart.render(Options.defaults().with("vgpu.kaiDialect.enabled", "true"));
    assertThat(withoutCrds.all("CustomResourceDefinition")).isEmpty();
    assertThat(RenderedChart.render(Options.defaults().with("vgpu.kaiDialect.installCRDs", "true")).all("CustomResourceDefinition")).as("only with the dialect").isEmpty();

    // The keys the extender reads are fixed on vgpu's pods once created.
    JsonNode policy = chart.get("ValidatingAdmissionPolicy", "hami-kai-dialect").path("spec");
    assertThat(policy.path("matchConditions").toString()).contains("system:serviceaccount:kube-system:hami-scheduler").contains("oldObject.spec.schedulerName == \\\"hami-scheduler\\\"");
    assertThat(policy.path("variables").get(0).path("expression").asString()).contains("\"pod-group-name\"").contains("\"gpu-fraction\"");
    assertThat(chart.get("ValidatingAdmissionPolicyBinding", "hami-kai-dialect").path("spec").path("policyName").asString()).isEqualTo("hami-kai-dialect");
  }

  @Test
  void theKaiDialectCannotBeCombinedWithVgpuUnderKaiOrShareItsSchedulerName() {
    assertThat(RenderedChart.failure(Options.kai().with("vgpu.kaiDialect.enabled", "true")))
        .get().asString().contains("vgpu.kai.enabled and vgpu.kaiDialect.enabled exclude each other");
    assertThat(RenderedChart.failure(Options.kaiDialect().with("vgpu.kaiDialect.schedulerName", "hami-scheduler")))
        .get().asString().contains("vgpu.kaiDialect.schedulerName (hami-scheduler) must differ from schedulerName");
    assertThat(RenderedChart.failure(Options.kaiDialect().with("scheduler.admissionWebhook.enabled", "false")))
        .get().asString().contains("vgpu.kaiDialect.enabled needs scheduler.admissionWebhook.enabled");
    assertThat(RenderedChart.failure(Options.kaiDialect().with("vgpu.kaiDialect.gangHoldTimeout", "soon"))).isPresent();
  }
}
