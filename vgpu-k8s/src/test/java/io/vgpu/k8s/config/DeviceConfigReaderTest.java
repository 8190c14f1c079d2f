package io.vgpu.k8s.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ResourceSchema;
import io.vgpu.api.SharingConfig;
import io.vgpu.core.EngineConfig;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.YamlReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DeviceConfigReaderTest {
  private final DeviceConfigReader reader = new DeviceConfigReader(Set.of("fgd"));

  private DeviceConfig read(String yaml) {
    return reader.apply(DeviceConfig.DEFAULT, YamlReader.read(yaml, "c.yaml").asMap("config"), "config");
  }

  @Test
  void defaultsAreHamis() {
    DeviceConfig d = DeviceConfig.DEFAULT;
    assertThat(d.schema()).isEqualTo(ResourceSchema.nvidia());
    assertThat(d.sharing()).isEqualTo(SharingConfig.DEFAULT);
    assertThat(d.engineConfig()).isEqualTo(EngineConfig.DEFAULT);
    assertThat(d.gpuCorePolicy()).isEqualTo("default");
    assertThat(d.libCudaLogLevel()).isEqualTo("1");
    assertThat(d.runtimeClassName()).isEmpty();
    assertThat(d.overwriteEnv()).isFalse();
  }

  @Test
  void readsEveryKey() {
    DeviceConfig c =
        read(
            """
            resourceCountName: example.com/gpu
            resourceMemoryName: example.com/mem
            resourceMemoryPercentageName: example.com/pct
            resourceCoreName: example.com/cores
            resourcePriorityName: example.com/prio
            overwriteEnv: true
            defaultMemory: 1024
            defaultCores: 10
            defaultGPUNum: 2
            memoryFactor: 4
            disableCoreLimit: true
            gpuCorePolicy: force
            runtimeClassName: nvidia
            migProfileAllowlist:
            - models: [A100-SXM4-40GB]
              profiles: [1g.5gb, 7g.40gb]
            deviceSplitCount: 4
            deviceMemoryScaling: 2
            deviceCoreScaling: 1.5
            preConfiguredDeviceMemory: 8192
            libCudaLogLevel: 3
            enableNumaTopology: true
            nodeSchedulerPolicy: spread
            gpuSchedulerPolicy: binpack,numa
            disableControlNamespaces: [gpu-admin, kube-system]
            """);
    assertThat(c.schema())
        .isEqualTo(
            new ResourceSchema("NVIDIA", "example.com/gpu", "example.com/mem", "example.com/pct", "example.com/cores", "example.com/prio", 4, 1024, 10, 2));
    assertThat(c.sharing()).isEqualTo(new SharingConfig(4, 2.0, 1.5, 8192));
    assertThat(c.engineConfig().nodePolicy()).isEqualTo("spread");
    assertThat(c.engineConfig().devicePolicy()).isEqualTo("binpack,numa");
    assertThat(c.overwriteEnv()).isTrue();
    assertThat(c.disableCoreLimit()).isTrue();
    assertThat(c.gpuCorePolicy()).isEqualTo("force");
    assertThat(c.runtimeClassName()).isEqualTo("nvidia");
    assertThat(c.migProfileAllowlist()).containsExactly(new MigProfileAllowance(List.of("A100-SXM4-40GB"), List.of("1g.5gb", "7g.40gb")));
    assertThat(c.libCudaLogLevel()).isEqualTo("3");
    assertThat(c.enableNumaTopology()).isTrue();
    assertThat(c.disableControlNamespaces()).containsExactly("gpu-admin", "kube-system");
  }

  @Test
  void onlyTheNamedNamespacesRunWithoutEnforcement() {
    assertThat(DeviceConfig.DEFAULT.disableControlNamespaces()).isEmpty();
    assertThat(DeviceConfig.DEFAULT.contractSettings().controlDisabledIn("kube-system")).isFalse();
    DeviceConfig c = read("disableControlNamespaces:\n- gpu-admin\n");
    assertThat(c.contractSettings().disableControlNamespaces()).containsExactly("gpu-admin");
    assertThat(c.contractSettings().controlDisabledIn("gpu-admin")).isTrue();
    assertThat(c.contractSettings().controlDisabledIn("ml")).isFalse();
    assertThat(read("disableControlNamespaces:\n").disableControlNamespaces()).isEmpty();
    assertThatThrownBy(() -> read("disableControlNamespaces: [ml, Team_A]\n"))
        .isInstanceOf(InputException.class)
        .hasMessage("c.yaml:1:32: config.disableControlNamespaces[1]: 'Team_A' is not a namespace name");
    assertThatThrownBy(() -> read("disableControlNamespaces: ml\n")).hasMessageContaining("config.disableControlNamespaces");
  }

  @Test
  void appliesOverAnotherConfigKeepingWhatIsNotSet() {
    DeviceConfig base = read("deviceSplitCount: 4\n");
    DeviceConfig next = reader.apply(base, YamlReader.read("deviceMemoryScaling: 2.0\n", "c.yaml").asMap(""), "setConfig");
    assertThat(next.deviceSplitCount()).isEqualTo(4);
    assertThat(next.deviceMemoryScaling()).isEqualTo(2.0);
  }

  @Test
  void acceptsARegisteredPlacementPolicy() {
    assertThat(read("gpuSchedulerPolicy: fgd\n").gpuSchedulerPolicy()).isEqualTo("fgd");
  }

  @Test
  void reportsBadKeysAndValuesWithPosition() {
    assertThatThrownBy(() -> read("deviceSplitCount: 10\ndeviceSplitcount: 4\n"))
        .isInstanceOf(InputException.class)
        .hasMessageStartingWith("c.yaml:2:1: unknown key 'deviceSplitcount' in config (known keys: resourceCountName,");
    assertThatThrownBy(() -> read("deviceSplitCount: 0\n")).hasMessage("c.yaml:1:19: config.deviceSplitCount: 0 is out of range [1, 2147483647]");
    assertThatThrownBy(() -> read("deviceMemoryScaling: -1\n")).hasMessage("c.yaml:1:22: config.deviceMemoryScaling: -1.0 must be positive");
    assertThatThrownBy(() -> read("deviceMemoryScaling: lots\n")).hasMessage("c.yaml:1:22: config.deviceMemoryScaling: expected a number, got 'lots'");
    assertThatThrownBy(() -> read("overwriteEnv: maybe\n")).hasMessage("c.yaml:1:15: config.overwriteEnv: expected true or false, got 'maybe'");
    assertThatThrownBy(() -> read("nodeSchedulerPolicy: random\n"))
        .hasMessage("c.yaml:1:22: config.nodeSchedulerPolicy: unknown value 'random' (known: binpack, spread)");
    assertThatThrownBy(() -> read("gpuSchedulerPolicy: binpack,best\n"))
        .hasMessage("c.yaml:1:21: config.gpuSchedulerPolicy: unknown policy 'best' in 'binpack,best' (known: binpack, mutex, numa, spread, topology-aware, fgd)");
    assertThatThrownBy(() -> read("gpuCorePolicy: sometimes\n")).hasMessageContaining("config.gpuCorePolicy: unknown value 'sometimes'");
    assertThatThrownBy(() -> read("resourceCountName: \"\"\n")).hasMessage("c.yaml:1:20: config.resourceCountName: must not be empty");
    assertThatThrownBy(() -> read("libCudaLogLevel: debug\n")).hasMessage("c.yaml:1:18: config.libCudaLogLevel: 'debug' must be a digit 0-9 or empty");
    assertThatThrownBy(() -> read("migProfileAllowlist: [{models: [A30], profiles: [big]}]\n"))
        .hasMessageContaining("config.migProfileAllowlist[0].profiles: 'big' is not a MIG profile");
  }

  @Test
  void readsHamisDeviceConfigFileIgnoringOtherVendors(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("device-config.yaml");
    Files.writeString(
        file,
        """
        nvidia:
          resourceCountName: nvidia.com/gpu
          resourceMemoryName: nvidia.com/gpumem
          resourceMemoryPercentageName: nvidia.com/gpumem-percentage
          resourceCoreName: nvidia.com/gpucores
          resourcePriorityName: nvidia.com/priority
          overwriteEnv: false
          defaultMemory: 0
          defaultCores: 0
          defaultGPUNum: 1
          preConfiguredDeviceMemory: 0
          memoryFactor: 1
          deviceSplitCount: 10
          deviceMemoryScaling: 1
          deviceCoreScaling: 1
          enableNumaTopology: false
          gpuCorePolicy: default
          libCudaLogLevel: 1
          runtimeClassName: ""
          migProfileAllowlist:
          - models: [ "A30" ]
            profiles: [ "1g.6gb", "2g.12gb", "4g.24gb" ]
        cambricon:
          resourceCountName: cambricon.com/vmlu
        iluvatars:
        - chipName: MR-V100
          commonWord: MR-V100
        """);
    DeviceConfig c = reader.readFile(file);
    assertThat(c.toBuilder().migProfileAllowlist(List.of()).build()).isEqualTo(DeviceConfig.DEFAULT);
    assertThat(c.migProfileAllowlist()).hasSize(1);
  }

  @Test
  void aDeviceConfigFileNeedsItsNvidiaSection(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("device-config.yaml");
    Files.writeString(file, "nvidai:\n  deviceSplitCount: 4\n");
    assertThatThrownBy(() -> reader.readFile(file)).hasMessageContaining(":1:1: unknown key 'nvidai' in device config");
    Files.writeString(file, "hygon: {}\n");
    assertThatThrownBy(() -> reader.readFile(file)).hasMessageContaining("device config: missing required key 'nvidia'");
  }

  @Test
  void theWatchdogDefaultsToKillAfterTwoSecondsOverTheGrantPlus512MiB() {
    WatchdogConfig w = DeviceConfig.DEFAULT.watchdog();
    assertThat(w).isEqualTo(new WatchdogConfig(WatchdogConfig.Action.KILL, Duration.ofSeconds(1), Duration.ofSeconds(2), 512));
    assertThat(w.toleranceBytes()).isEqualTo(512L << 20);
  }

  @Test
  void readsTheWatchdogAndKeepsWhatAMappingLeavesOut() {
    DeviceConfig c = read("watchdog:\n  action: report\n  pollInterval: 250ms\n  gracePeriod: 1m30s\n  toleranceMiB: 0\n");
    assertThat(c.watchdog()).isEqualTo(new WatchdogConfig(WatchdogConfig.Action.REPORT, Duration.ofMillis(250), Duration.ofSeconds(90), 0));
    DeviceConfig later = reader.apply(c, YamlReader.read("watchdog: {gracePeriod: 0}\n", "s.yaml").asMap("setConfig"), "setConfig");
    assertThat(later.watchdog()).isEqualTo(new WatchdogConfig(WatchdogConfig.Action.REPORT, Duration.ofMillis(250), Duration.ZERO, 0));
    assertThat(read("watchdog: {}\n")).isEqualTo(DeviceConfig.DEFAULT);
  }

  @Test
  void aBadWatchdogSettingIsOneLineNamingIt() {
    assertThatThrownBy(() -> read("watchdog: {action: ignore}\n")).hasMessage("c.yaml:1:20: config.watchdog.action: unknown value 'ignore' (known: kill, report)");
    assertThatThrownBy(() -> read("watchdog: {pollInterval: 1 second}\n"))
        .hasMessage("c.yaml:1:26: config.watchdog.pollInterval: '1 second' is not a duration such as 5m, 28s or 1h30m");
    assertThatThrownBy(() -> read("watchdog: {pollInterval: 10ms}\n")).hasMessage("c.yaml:1:26: config.watchdog.pollInterval: 10ms is out of range [50ms, 10m]");
    assertThatThrownBy(() -> read("watchdog: {gracePeriod: 1h}\n")).hasMessage("c.yaml:1:25: config.watchdog.gracePeriod: 1h is out of range [0, 10m]");
    assertThatThrownBy(() -> read("watchdog: {toleranceMiB: -1}\n")).hasMessage("c.yaml:1:26: config.watchdog.toleranceMiB: -1 is out of range [0, 1073741824]");
    assertThatThrownBy(() -> read("watchdog: {grace: 2s}\n")).hasMessageStartingWith("c.yaml:1:12: unknown key 'grace' in config.watchdog (known keys: action, pollInterval, gracePeriod, toleranceMiB, ungranted, exemptNamespaces");
    assertThatThrownBy(() -> read("watchdog: kill\n")).hasMessageContaining("config.watchdog");
  }

  @Test
  void readsTheUngrantedActionAndTheExemptNamespaces(@TempDir Path dir) throws Exception {
    assertThat(DeviceConfig.DEFAULT.watchdog().ungrantedAction()).isEqualTo(WatchdogConfig.Action.KILL);
    assertThat(DeviceConfig.DEFAULT.watchdog().exemptNamespaces()).isEmpty();
    Path file = dir.resolve("device-config.yaml");
    Files.writeString(file, "nvidia:\n  watchdog:\n    ungranted:\n      action: report\n    exemptNamespaces: [kube-system, monitoring]\n");
    WatchdogConfig w = reader.readFile(file).watchdog();
    assertThat(w.ungrantedAction()).isEqualTo(WatchdogConfig.Action.REPORT);
    assertThat(w.exemptNamespaces()).containsExactly("kube-system", "monitoring");
    assertThat(w.action()).as("the over-grant action is its own").isEqualTo(WatchdogConfig.Action.KILL);
    assertThat(read("watchdog: {exemptNamespaces: null, ungranted: {}}\n")).isEqualTo(DeviceConfig.DEFAULT);
  }

  @Test
  void anUnknownUngrantedActionOrAMalformedExemptionFailsAtLoadNamingTheFieldTheValueAndTheFile(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("device-config.yaml");
    Files.writeString(file, "nvidia:\n  watchdog:\n    ungranted:\n      action: ignore\n");
    assertThatThrownBy(() -> reader.readFile(file))
        .hasMessage(file + ":4:15: nvidia.watchdog.ungranted.action: unknown value 'ignore' (known: kill, report)");
    Files.writeString(file, "nvidia:\n  watchdog:\n    exemptNamespaces: [kube-system, Team_A]\n");
    assertThatThrownBy(() -> reader.readFile(file))
        .hasMessage(file + ":3:37: nvidia.watchdog.exemptNamespaces[1]: 'Team_A' is not a namespace name");
    Files.writeString(file, "nvidia:\n  watchdog:\n    exemptNamespaces: kube-system\n");
    assertThatThrownBy(() -> reader.readFile(file))
        .hasMessage(file + ":3:23: nvidia.watchdog.exemptNamespaces: expected a list, got 'kube-system'");
    Files.writeString(file, "nvidia:\n  watchdog:\n    ungranted: {mode: kill}\n");
    assertThatThrownBy(() -> reader.readFile(file)).hasMessageStartingWith(file + ":3:17: unknown key 'mode' in nvidia.watchdog.ungranted (known keys: action");
  }

  @Test
  void goDurationsReadAndWriteTheSameText() {
    assertThat(GoDurations.parse("1h30m")).isEqualTo(Duration.ofMinutes(90));
    assertThat(GoDurations.parse("250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(GoDurations.parse("0")).isZero();
    assertThat(GoDurations.format(Duration.ofSeconds(2))).isEqualTo("2s");
    assertThat(GoDurations.format(Duration.ofSeconds(90))).isEqualTo("1m30s");
    assertThat(GoDurations.format(Duration.ofMinutes(10))).isEqualTo("10m");
    assertThat(GoDurations.format(Duration.ofSeconds(3601))).isEqualTo("1h1s");
    assertThat(GoDurations.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(GoDurations.format(Duration.ofNanos(1500))).isEqualTo("1500ns");
    assertThat(GoDurations.format(Duration.ofNanos(3000))).isEqualTo("3us");
    assertThat(GoDurations.format(Duration.ZERO)).isEqualTo("0");
    assertThatThrownBy(() -> GoDurations.parse("5 m")).isInstanceOf(IllegalArgumentException.class).hasMessage("'5 m' is not a duration such as 5m, 28s or 1h30m");
    assertThatThrownBy(() -> GoDurations.parse("99999999999999999999h")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aDeviceConfigFileMayUseAnchorsAndMergeKeys(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("device-config.yaml");
    Files.writeString(
        file,
        """
        nvidia:
          <<: &sharing
            deviceSplitCount: 4
            deviceMemoryScaling: 2
          deviceSplitCount: 8
          defaultMemory: &mem 1024
          preConfiguredDeviceMemory: *mem
        """);
    DeviceConfig c = reader.readFile(file);
    assertThat(c.deviceSplitCount()).isEqualTo(8);
    assertThat(c.deviceMemoryScaling()).isEqualTo(2.0);
    assertThat(c.preConfiguredDeviceMemory()).isEqualTo(1024);
  }

  @Test
  void readsTheNamespacesWhereTheWebhookIgnoreLabelCounts() {
    assertThat(DeviceConfig.DEFAULT.webhookIgnoreLabelNamespaces()).isEmpty();
    assertThat(read("webhookIgnoreLabelNamespaces: [kube-system, gpu-ops]\n").webhookIgnoreLabelNamespaces()).containsExactly("kube-system", "gpu-ops");
    assertThat(read("webhookIgnoreLabelNamespaces:\n").webhookIgnoreLabelNamespaces()).isEmpty();
    assertThatThrownBy(() -> read("webhookIgnoreLabelNamespaces: [Team_A]\n"))
        .isInstanceOf(InputException.class)
        .hasMessage("c.yaml:1:32: config.webhookIgnoreLabelNamespaces[0]: 'Team_A' is not a namespace name");
  }
}
