package io.vgpu.examples.lab.components;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.MappingIterator;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The reference deployment as its manifests say it ({@code examples/deploy/}): the arguments and
 * environment of the {@code vgpu} containers, kube-scheduler's configuration, and the webhook
 * configuration. The lab runs what these files say, changing only what names a place.
 */
public final class ReferenceDeployment {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();

  /** The scheduler pod's {@code vgpu} container. */
  public static final String SCHEDULER_FILE = "scheduler.yaml";
  /** The node agent DaemonSet. */
  public static final String DEVICE_PLUGIN_FILE = "device-plugin.yaml";
  /** kube-scheduler's configuration (the ConfigMap's content). */
  public static final String SCHEDULER_CONFIG_FILE = "scheduler-config.yaml";
  /** The mutating webhook configuration. */
  public static final String WEBHOOK_FILE = "webhook.yaml";

  private final Path directory;
  private final Container scheduler;
  private final Container devicePlugin;
  private final JsonNode schedulerConfig;
  private final JsonNode webhookConfig;

  /**
   * A container as the manifest gives it.
   *
   * @param args its arguments, starting with the {@code vgpu} subcommand
   * @param env its literal environment variables (those set from the downward API are in {@code fieldEnv})
   * @param fieldEnv variables set from the downward API: name to field path (e.g. {@code metadata.name})
   * @param nodeSelector the pod template's node selector (which nodes a DaemonSet runs on)
   */
  public record Container(List<String> args, Map<String, String> env, Map<String, String> fieldEnv, Map<String, String> nodeSelector) {}

  private ReferenceDeployment(Path directory) {
    this.directory = directory;
    this.scheduler = container(document(SCHEDULER_FILE, "Deployment"), "vgpu");
    this.devicePlugin = container(document(DEVICE_PLUGIN_FILE, "DaemonSet"), "vgpu");
    this.schedulerConfig = document(SCHEDULER_CONFIG_FILE, "KubeSchedulerConfiguration");
    this.webhookConfig = document(WEBHOOK_FILE, "MutatingWebhookConfiguration");
  }

  /**
   * Reads the manifests of a directory.
   *
   * @throws UnavailableException when a manifest is missing or lacks what the lab runs
   */
  public static ReferenceDeployment read(Path directory) {
    return new ReferenceDeployment(directory);
  }

  /** The scheduler's {@code vgpu} container. */
  public Container scheduler() {
    return scheduler;
  }

  /** The node agent's {@code vgpu} container. */
  public Container devicePlugin() {
    return devicePlugin;
  }

  /** kube-scheduler's {@code KubeSchedulerConfiguration}. */
  public JsonNode schedulerConfiguration() {
    return schedulerConfig;
  }

  /** The {@code MutatingWebhookConfiguration}. */
  public JsonNode webhookConfiguration() {
    return webhookConfig;
  }

  private JsonNode document(String file, String kind) {
    Path path = directory.resolve(file);
    List<JsonNode> documents = new ArrayList<>();
    try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(Files.readString(path))) {
      while (it.hasNextValue()) {
        JsonNode doc = it.nextValue();
        if (doc != null && !doc.isNull()) {
          documents.add(doc);
        }
      }
    } catch (IOException | RuntimeException e) {
      throw new UnavailableException("cannot read the reference deployment's " + path + ": " + e.getMessage());
    }
    return documents.stream()
        .filter(d -> kind.equals(d.path("kind").asString("")))
        .findFirst()
        .orElseThrow(() -> new UnavailableException("the reference deployment's " + path + " has no " + kind));
  }

  private Container container(JsonNode workload, String name) {
    JsonNode containers = workload.path("spec").path("template").path("spec").path("containers");
    for (JsonNode c : containers) {
      if (!name.equals(c.path("name").asString(""))) {
        continue;
      }
      List<String> args = new ArrayList<>();
      c.path("args").forEach(a -> args.add(a.asString()));
      Map<String, String> env = new LinkedHashMap<>();
      Map<String, String> fieldEnv = new LinkedHashMap<>();
      for (JsonNode e : c.path("env")) {
        String key = e.path("name").asString("");
        Optional<String> field = Optional.ofNullable(e.path("valueFrom").path("fieldRef").path("fieldPath").asString(null));
        if (field.isPresent()) {
          fieldEnv.put(key, field.get());
        } else {
          env.put(key, e.path("value").asString(""));
        }
      }
      if (args.isEmpty()) {
        throw new UnavailableException("the reference deployment's container " + name + " of " + workload.path("metadata").path("name").asString("") + " has no args");
      }
      Map<String, String> nodeSelector = new LinkedHashMap<>();
      workload.path("spec").path("template").path("spec").path("nodeSelector").properties().forEach(n -> nodeSelector.put(n.getKey(), n.getValue().asString("")));
      return new Container(List.copyOf(args), env, fieldEnv, nodeSelector);
    }
    throw new UnavailableException("the reference deployment's " + workload.path("metadata").path("name").asString("") + " has no container named " + name);
  }

  /**
   * Arguments with the flags that name places set to the lab's values: each {@code --flag=value} or
   * {@code --flag value} whose flag is a key of {@code places} gets the new value; a place flag the
   * manifest does not pass is added at the end. Every other argument stays as written.
   */
  public static List<String> withPlaces(List<String> args, Map<String, String> places) {
    List<String> out = new ArrayList<>();
    Map<String, String> missing = new LinkedHashMap<>(places);
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      int eq = arg.indexOf('=');
      String flag = eq < 0 ? arg : arg.substring(0, eq);
      if (!places.containsKey(flag)) {
        out.add(arg);
        continue;
      }
      missing.remove(flag);
      out.add(flag + "=" + places.get(flag));
      if (eq < 0 && i + 1 < args.size() && !args.get(i + 1).startsWith("-")) {
        i++; // the value was the next argument
      }
    }
    missing.forEach((flag, value) -> out.add(flag + "=" + value));
    return out;
  }
}
