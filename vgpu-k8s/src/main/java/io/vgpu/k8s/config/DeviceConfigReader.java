package io.vgpu.k8s.config;

import io.vgpu.api.spi.ContractSettings;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.YamlList;
import io.vgpu.k8s.yaml.YamlMap;
import io.vgpu.k8s.yaml.YamlNode;
import io.vgpu.k8s.yaml.YamlReader;
import io.vgpu.k8s.yaml.YamlScalar;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Reads {@link DeviceConfig}s: the {@code config} and {@code setConfig} mappings of a scenario (keys of
 * HAMi's {@code nvidia} section plus {@code nodeSchedulerPolicy}, {@code gpuSchedulerPolicy}, and two
 * keys of vgpu's own: the {@code watchdog} mapping and {@code disableControlNamespaces}, a list of
 * namespaces whose containers run without enforcement), and HAMi's {@code device-config.yaml} file,
 * whose {@code nvidia} section is read and whose other vendors' sections are ignored. Unknown keys and
 * values of the wrong type are {@link InputException}s naming the key, the value and the position.
 */
public final class DeviceConfigReader {
  /** The keys a configuration mapping may hold. */
  public static final List<String> KEYS =
      List.of(
          "resourceCountName",
          "resourceMemoryName",
          "resourceMemoryPercentageName",
          "resourceCoreName",
          "resourcePriorityName",
          "overwriteEnv",
          "defaultMemory",
          "defaultCores",
          "defaultGPUNum",
          "memoryFactor",
          "disableCoreLimit",
          "gpuCorePolicy",
          "runtimeClassName",
          "migProfileAllowlist",
          "deviceSplitCount",
          "deviceMemoryScaling",
          "deviceCoreScaling",
          "preConfiguredDeviceMemory",
          "libCudaLogLevel",
          "enableNumaTopology",
          "nodeSchedulerPolicy",
          "gpuSchedulerPolicy",
          "watchdog",
          "disableControlNamespaces",
          "webhookIgnoreLabelNamespaces");

  /** The keys of the {@code watchdog} mapping. */
  public static final List<String> WATCHDOG_KEYS = List.of("action", "pollInterval", "gracePeriod", "toleranceMiB", "ungranted", "exemptNamespaces");

  /** The keys of the {@code watchdog.ungranted} mapping. */
  public static final List<String> UNGRANTED_KEYS = List.of("action");

  /** Top-level sections of HAMi's device-config file besides {@code nvidia}; vgpu ignores them. */
  private static final List<String> OTHER_VENDOR_SECTIONS =
      List.of("metax", "hygon", "cambricon", "mthreads", "iluvatars", "enflame", "kunlun", "awsneuron", "amd", "vastai", "biren", "vnpus");

  private static final Set<String> DEVICE_POLICY_TOKENS = Set.of("binpack", "spread", "mutex", "numa", "topology-aware");
  private static final Set<String> CORE_POLICIES = Set.of("default", "force", "disable");
  private static final Pattern MIG_PROFILE = Pattern.compile("\\d+g\\.\\S+");
  /** A DNS label, as Kubernetes names namespaces. */
  private static final Pattern NAMESPACE = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

  private final Set<String> placementPolicies;

  /**
   * A reader that accepts, as {@code gpuSchedulerPolicy}, HAMi's policies and the named placement
   * policies given.
   */
  public DeviceConfigReader(Set<String> placementPolicies) {
    this.placementPolicies = Set.copyOf(placementPolicies);
  }

  /**
   * Reads HAMi's {@code device-config.yaml}.
   *
   * @throws InputException when the file is missing, malformed, or holds an unknown key or bad value
   */
  public DeviceConfig readFile(Path file) {
    YamlMap root = YamlReader.read(file).asMap("device config");
    List<String> known = new ArrayList<>();
    known.add("nvidia");
    known.addAll(OTHER_VENDOR_SECTIONS);
    root.requireKnownKeys("device config", known);
    YamlMap nvidia = root.require("nvidia", "device config").asMap("nvidia");
    return apply(DeviceConfig.DEFAULT, nvidia, "nvidia");
  }

  /**
   * Applies the keys of {@code map} over {@code base}.
   *
   * @param field the mapping's path for error messages, e.g. {@code config}
   * @throws InputException on an unknown key or a bad value
   */
  public DeviceConfig apply(DeviceConfig base, YamlMap map, String field) {
    map.requireKnownKeys(field, KEYS);
    DeviceConfig.Builder b = base.toBuilder();
    for (YamlMap.Entry e : map.entries().values()) {
      String f = YamlMap.path(field, e.key());
      YamlNode v = e.value();
      switch (e.key()) {
        case "resourceCountName" -> b.resourceCountName(nonEmptyString(v, f));
        case "resourceMemoryName" -> b.resourceMemoryName(string(v, f));
        case "resourceMemoryPercentageName" -> b.resourceMemoryPercentageName(string(v, f));
        case "resourceCoreName" -> b.resourceCoreName(string(v, f));
        case "resourcePriorityName" -> b.resourcePriorityName(string(v, f));
        case "overwriteEnv" -> b.overwriteEnv(v.asScalar(f).asBoolean(f));
        case "defaultMemory" -> b.defaultMemory(v.asScalar(f).asInt(f, 0, Integer.MAX_VALUE));
        case "defaultCores" -> b.defaultCores(v.asScalar(f).asInt(f, 0, Integer.MAX_VALUE));
        case "defaultGPUNum" -> b.defaultGPUNum(v.asScalar(f).asInt(f, 0, Integer.MAX_VALUE));
        case "memoryFactor" -> b.memoryFactor(v.asScalar(f).asInt(f, 0, Integer.MAX_VALUE));
        case "disableCoreLimit" -> b.disableCoreLimit(v.asScalar(f).asBoolean(f));
        case "gpuCorePolicy" -> b.gpuCorePolicy(oneOf(v, f, CORE_POLICIES));
        case "runtimeClassName" -> b.runtimeClassName(string(v, f));
        case "migProfileAllowlist" -> b.migProfileAllowlist(migAllowlist(v, f));
        case "deviceSplitCount" -> b.deviceSplitCount(v.asScalar(f).asInt(f, 1, Integer.MAX_VALUE));
        case "deviceMemoryScaling" -> b.deviceMemoryScaling(positive(v, f));
        case "deviceCoreScaling" -> b.deviceCoreScaling(positive(v, f));
        case "preConfiguredDeviceMemory" -> b.preConfiguredDeviceMemory(v.asScalar(f).asLong(f, 0, Integer.MAX_VALUE));
        case "libCudaLogLevel" -> b.libCudaLogLevel(logLevel(v, f));
        case "enableNumaTopology" -> b.enableNumaTopology(v.asScalar(f).asBoolean(f));
        case "nodeSchedulerPolicy" -> b.nodeSchedulerPolicy(oneOf(v, f, Set.of("binpack", "spread")));
        case "gpuSchedulerPolicy" -> b.gpuSchedulerPolicy(devicePolicy(v, f));
        case "watchdog" -> b.watchdog(watchdog(base.watchdog(), v, f));
        case "disableControlNamespaces" -> b.disableControlNamespaces(new TreeSet<>(namespaces(v, f)));
        case "webhookIgnoreLabelNamespaces" -> b.webhookIgnoreLabelNamespaces(namespaces(v, f));
        default -> throw new IllegalStateException("key " + e.key() + " is listed in KEYS but not read");
      }
    }
    return b.build();
  }

  private static String string(YamlNode node, String field) {
    YamlScalar s = node.asScalar(field);
    return s.kind() == YamlScalar.Kind.NULL ? "" : s.text();
  }

  private static String nonEmptyString(YamlNode node, String field) {
    String value = string(node, field);
    if (value.isBlank()) {
      throw new InputException(node.position(), field + ": must not be empty");
    }
    return value;
  }

  private static String oneOf(YamlNode node, String field, Set<String> allowed) {
    String value = node.asScalar(field).asString(field);
    if (!allowed.contains(value)) {
      throw new InputException(node.position(), field + ": unknown value '" + value + "' (known: " + String.join(", ", allowed.stream().sorted().toList()) + ")");
    }
    return value;
  }

  /** libvgpu.so refuses to start on a log level other than 0-9, so the reader refuses it first. */
  private static String logLevel(YamlNode node, String field) {
    String value = string(node, field);
    try {
      ContractSettings.requireLogLevel(value);
    } catch (IllegalArgumentException e) {
      throw new InputException(node.position(), field + ": '" + value + "' must be a digit 0-9 or empty");
    }
    return value;
  }

  private static double positive(YamlNode node, String field) {
    double value = node.asScalar(field).asDouble(field);
    if (!(value > 0)) {
      throw new InputException(node.position(), field + ": " + value + " must be positive");
    }
    return value;
  }

  private String devicePolicy(YamlNode node, String field) {
    String value = node.asScalar(field).asString(field).trim();
    if (placementPolicies.contains(value)) {
      return value;
    }
    for (String token : value.split(",")) {
      if (!DEVICE_POLICY_TOKENS.contains(token.trim())) {
        List<String> known = new ArrayList<>(DEVICE_POLICY_TOKENS.stream().sorted().toList());
        known.addAll(placementPolicies.stream().sorted().toList());
        throw new InputException(
            node.position(), field + ": unknown policy '" + token.trim() + "' in '" + value + "' (known: " + String.join(", ", known) + ")");
      }
    }
    return value;
  }

  /** The {@code watchdog} mapping over {@code base}: keys it leaves out keep their values. */
  private static WatchdogConfig watchdog(WatchdogConfig base, YamlNode node, String field) {
    YamlMap map = node.asMap(field);
    map.requireKnownKeys(field, WATCHDOG_KEYS);
    WatchdogConfig.Action action = base.action();
    Duration poll = base.pollInterval();
    Duration grace = base.gracePeriod();
    long tolerance = base.toleranceMiB();
    WatchdogConfig.Action ungranted = base.ungrantedAction();
    List<String> exempt = base.exemptNamespaces();
    for (YamlMap.Entry e : map.entries().values()) {
      String f = YamlMap.path(field, e.key());
      YamlNode v = e.value();
      switch (e.key()) {
        case "action" -> action = action(v, f);
        case "pollInterval" -> poll = duration(v, f, WatchdogConfig.MIN_POLL_INTERVAL, WatchdogConfig.MAX_INTERVAL);
        case "gracePeriod" -> grace = duration(v, f, Duration.ZERO, WatchdogConfig.MAX_INTERVAL);
        case "toleranceMiB" -> tolerance = v.asScalar(f).asLong(f, 0, WatchdogConfig.MAX_TOLERANCE_MIB);
        case "ungranted" -> ungranted = ungrantedAction(ungranted, v, f);
        case "exemptNamespaces" -> exempt = namespaces(v, f);
        default -> throw new IllegalStateException("key " + e.key() + " is listed in WATCHDOG_KEYS but not read");
      }
    }
    return new WatchdogConfig(action, poll, grace, tolerance, ungranted, exempt);
  }

  /** The {@code watchdog.ungranted} mapping's action over {@code base}. */
  private static WatchdogConfig.Action ungrantedAction(WatchdogConfig.Action base, YamlNode node, String field) {
    YamlMap map = node.asMap(field);
    map.requireKnownKeys(field, UNGRANTED_KEYS);
    YamlMap.Entry action = map.entries().get("action");
    return action == null ? base : action(action.value(), YamlMap.path(field, "action"));
  }

  private static WatchdogConfig.Action action(YamlNode node, String field) {
    return WatchdogConfig.Action.valueOf(oneOf(node, field, Set.of("kill", "report")).toUpperCase(Locale.ROOT));
  }

  private static Duration duration(YamlNode node, String field, Duration min, Duration max) {
    String text = node.asScalar(field).asString(field).trim();
    Duration value;
    try {
      value = GoDurations.parse(text);
    } catch (IllegalArgumentException e) {
      throw new InputException(node.position(), field + ": " + e.getMessage());
    }
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new InputException(
          node.position(), field + ": " + text + " is out of range [" + GoDurations.format(min) + ", " + GoDurations.format(max) + "]");
    }
    return value;
  }

  private static List<MigProfileAllowance> migAllowlist(YamlNode node, String field) {
    if (node instanceof YamlScalar s && s.kind() == YamlScalar.Kind.NULL) {
      return List.of();
    }
    List<MigProfileAllowance> out = new ArrayList<>();
    List<YamlNode> items = node.asList(field).items();
    for (int i = 0; i < items.size(); i++) {
      String f = field + "[" + i + "]";
      YamlMap entry = items.get(i).asMap(f);
      entry.requireKnownKeys(f, List.of("models", "profiles"));
      List<String> models = strings(entry.require("models", f), f + ".models");
      List<String> profiles = strings(entry.require("profiles", f), f + ".profiles");
      YamlList profileNodes = entry.require("profiles", f).asList(f + ".profiles");
      for (int p = 0; p < profiles.size(); p++) {
        if (!MIG_PROFILE.matcher(profiles.get(p)).matches()) {
          throw new InputException(
              profileNodes.items().get(p).position(), f + ".profiles: '" + profiles.get(p) + "' is not a MIG profile such as 1g.10gb");
        }
      }
      out.add(new MigProfileAllowance(models, profiles));
    }
    return out;
  }

  /** A list of namespace names; null is the empty list. */
  private static List<String> namespaces(YamlNode node, String field) {
    if (node instanceof YamlScalar s && s.kind() == YamlScalar.Kind.NULL) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    List<YamlNode> items = node.asList(field).items();
    for (int i = 0; i < items.size(); i++) {
      String name = items.get(i).asScalar(field + "[" + i + "]").asString(field + "[" + i + "]");
      if (!NAMESPACE.matcher(name).matches()) {
        throw new InputException(items.get(i).position(), field + "[" + i + "]: '" + name + "' is not a namespace name");
      }
      out.add(name);
    }
    return out;
  }

  private static List<String> strings(YamlNode node, String field) {
    List<String> out = new ArrayList<>();
    for (YamlNode item : node.asList(field).items()) {
      out.add(item.asScalar(field).asString(field));
    }
    return out;
  }
}
