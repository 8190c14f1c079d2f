package io.vgpu.examples.lab.components;

import io.vgpu.examples.lab.apiserver.UserInfo;
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
 * The reference deployment as its manifests say it ({@code examples/deploy/}, the chart's render for its
 * default values, one file per template): the arguments and environment of the {@code vgpu} containers,
 * kube-scheduler's configuration (inside the scheduler's ConfigMap), and the webhook configuration. Objects
 * are found by kind and container name across every {@code .yaml} file of the directory, whatever the files
 * are called. The lab runs what these manifests say, changing only what names a place.
 */
public final class ReferenceDeployment {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();

  /** The scheduler Deployment's {@code vgpu scheduler} container. */
  public static final String SCHEDULER_CONTAINER = "vgpu-scheduler-extender";
  /** The scheduler Deployment's init container, {@code vgpu certificates}. */
  public static final String CERTIFICATES_CONTAINER = "certificates";
  /** The scheduler Deployment's kube-scheduler container. */
  public static final String KUBE_SCHEDULER_CONTAINER = "kube-scheduler";
  /** The node agent DaemonSet's {@code vgpu device-plugin} container. */
  public static final String DEVICE_PLUGIN_CONTAINER = "device-plugin";

  /**
   * The flags of the chart's {@code vgpu} containers that name a place on the machine or in the cluster
   * (an address, a file, a directory, the API server): the ones the lab gives its own values through
   * {@link #withPlaces}.
   */
  public static final List<String> PLACE_FLAGS =
      List.of("--http_bind", "--extender-bind-address", "--metrics-bind-address", "--cert_file", "--key_file", "--client-ca-file", "--webhook-client-ca-file",
          "--device-config-file", "--kubeconfig", "--device-plugin-dir", "--hook-path", "--node-name", "--client-dir", "--serving-dir",
          "--pod-resources-socket");

  private final Path directory;
  private final List<JsonNode> objects;
  private final JsonNode schedulerWorkload;
  private final JsonNode devicePluginWorkload;
  private final Container scheduler;
  private final Container certificates;
  private final @org.jspecify.annotations.Nullable Container kubeScheduler;
  private final Container devicePlugin;
  private final @org.jspecify.annotations.Nullable JsonNode schedulerConfig;
  private final JsonNode webhookConfig;

  /**
   * A container as the manifest gives it.
   *
   * @param args its arguments, starting with the {@code vgpu} subcommand
   * @param env its literal environment variables (those set from the downward API are in {@code fieldEnv})
   * @param fieldEnv variables set from the downward API: name to field path (e.g. {@code metadata.name})
   * @param nodeSelector the pod template's node selector (which nodes a DaemonSet runs on)
   * @param mounts its volume mounts: mount path to the pod volume's name
   */
  public record Container(List<String> args, Map<String, String> env, Map<String, String> fieldEnv, Map<String, String> nodeSelector, Map<String, String> mounts) {
    /**
     * Each argument whose value lies in a mounted volume, with that value moved to where the volume is
     * on this machine ({@code --cert_file=/tls/tls.crt} with volume {@code tls} at {@code /lab/tls}
     * becomes {@code --cert_file=/lab/tls/tls.crt}); a volume {@code where} does not place stays put.
     *
     * @param where the directory of each volume of the pod, by volume name
     */
    public List<String> argsWithVolumes(Map<String, Path> where) {
      List<String> out = new ArrayList<>();
      for (String arg : args) {
        int eq = arg.indexOf('=');
        out.add(eq < 0 ? arg : arg.substring(0, eq + 1) + inVolume(arg.substring(eq + 1), where));
      }
      return out;
    }

    /** A path in this container, moved to where its volume is on this machine (unchanged if it lies in none placed). */
    public String inVolume(String path, Map<String, Path> where) {
      String best = null;
      for (String mountPath : mounts.keySet()) {
        boolean under = path.equals(mountPath) || path.startsWith(mountPath.endsWith("/") ? mountPath : mountPath + "/");
        if (under && where.containsKey(mounts.get(mountPath)) && (best == null || mountPath.length() > best.length())) {
          best = mountPath;
        }
      }
      if (best == null) {
        return path;
      }
      String rest = path.substring(best.length()).replaceFirst("^/", "");
      Path dir = where.get(mounts.get(best));
      return rest.isEmpty() ? dir.toString() : dir.resolve(rest).toString();
    }
  }

  private ReferenceDeployment(Path directory) {
    this.directory = directory;
    this.objects = readAll(directory);
    this.schedulerWorkload = workload("Deployment", SCHEDULER_CONTAINER);
    this.scheduler = container(schedulerWorkload, SCHEDULER_CONTAINER);
    this.certificates = container(schedulerWorkload, CERTIFICATES_CONTAINER);
    // the render under KAI Scheduler runs no kube-scheduler and no extender: both are optional
    this.kubeScheduler = hasContainer(schedulerWorkload, KUBE_SCHEDULER_CONTAINER) ? container(schedulerWorkload, KUBE_SCHEDULER_CONTAINER) : null;
    this.devicePluginWorkload = workload("DaemonSet", DEVICE_PLUGIN_CONTAINER);
    this.devicePlugin = container(devicePluginWorkload, DEVICE_PLUGIN_CONTAINER);
    this.schedulerConfig = kubeScheduler == null ? null : kubeSchedulerConfiguration();
    this.webhookConfig = objects.stream().filter(o -> kind(o).equals("MutatingWebhookConfiguration")).findFirst()
        .orElseThrow(() -> new UnavailableException("the reference deployment in " + directory + " has no MutatingWebhookConfiguration"));
  }

  /**
   * Reads the manifests of a directory.
   *
   * @throws UnavailableException when a manifest is unreadable or the directory lacks what the lab runs
   */
  public static ReferenceDeployment read(Path directory) {
    return new ReferenceDeployment(directory);
  }

  /** The scheduler's {@code vgpu scheduler} container. */
  public Container scheduler() {
    return scheduler;
  }

  /** The scheduler pod's init container, {@code vgpu certificates}, which writes the certificates the scheduler and kube-scheduler read. */
  public Container certificates() {
    return certificates;
  }

  /**
   * The scheduler pod's kube-scheduler container (its volume mounts place the files its configuration names).
   *
   * @throws UnavailableException when the deployment runs none (the render under KAI Scheduler)
   */
  public Container kubeScheduler() {
    if (kubeScheduler == null) {
      throw new UnavailableException("the reference deployment in " + directory + " runs no kube-scheduler");
    }
    return kubeScheduler;
  }

  /** Whether the scheduler pod runs kube-scheduler with vgpu's extender (not so under KAI Scheduler). */
  public boolean hasKubeScheduler() {
    return kubeScheduler != null;
  }

  /**
   * The scheduler pod's volumes that are ConfigMaps: volume name to ConfigMap name (the lab writes their
   * files itself: the device config it runs with).
   */
  public Map<String, String> schedulerConfigMapVolumes() {
    Map<String, String> out = new LinkedHashMap<>();
    schedulerWorkload.path("spec").path("template").path("spec").path("volumes").forEach(v -> {
      if (v.has("configMap")) {
        out.put(v.path("name").asString(""), v.path("configMap").path("name").asString(""));
      }
    });
    return out;
  }

  /** The node agent's {@code vgpu device-plugin} container. */
  public Container devicePlugin() {
    return devicePlugin;
  }

  /**
   * The user the scheduler pod's containers are ({@code vgpu scheduler}, kube-scheduler and the {@code vgpu
   * certificates} init container alike): the Deployment's ServiceAccount in the Deployment's namespace.
   */
  public UserInfo schedulerUser() {
    return UserInfo.serviceAccount(namespace(schedulerWorkload), serviceAccountName(schedulerWorkload));
  }

  /**
   * The user a node agent is on {@code node}: the DaemonSet's ServiceAccount with the node-name claim of
   * the token kubelet projects into a pod bound to that node.
   */
  public UserInfo devicePluginUser(String node) {
    return UserInfo.boundServiceAccount(namespace(devicePluginWorkload), serviceAccountName(devicePluginWorkload), node);
  }

  private static String namespace(JsonNode object) {
    return object.path("metadata").path("namespace").asString("default");
  }

  private static String serviceAccountName(JsonNode workload) {
    return workload.path("spec").path("template").path("spec").path("serviceAccountName").asString("default");
  }

  /**
   * The deployment's ValidatingAdmissionPolicies and ValidatingAdmissionPolicyBindings, as written (none
   * when it has none): the API server applies them to every write once they are stored.
   */
  public List<JsonNode> admissionPolicies() {
    return objects.stream().filter(o -> kind(o).equals("ValidatingAdmissionPolicy") || kind(o).equals("ValidatingAdmissionPolicyBinding")).toList();
  }

  /**
   * kube-scheduler's {@code KubeSchedulerConfiguration}.
   *
   * @throws UnavailableException when the deployment runs no kube-scheduler
   */
  public JsonNode schedulerConfiguration() {
    if (schedulerConfig == null) {
      throw new UnavailableException("the reference deployment in " + directory + " runs no kube-scheduler");
    }
    return schedulerConfig;
  }

  /** The {@code MutatingWebhookConfiguration}. */
  public JsonNode webhookConfiguration() {
    return webhookConfig;
  }

  /**
   * The scheduler container's port the webhook's Service sends the API server to: the Service port the
   * webhook configuration names, through that Service's {@code targetPort} (a number or the name of a
   * container port).
   *
   * @throws UnavailableException when the webhook names no Service of the deployment, or its port leads nowhere
   */
  public int webhookContainerPort() {
    JsonNode service = webhookConfig.path("webhooks").path(0).path("clientConfig").path("service");
    String name = service.path("name").asString("");
    int port = service.path("port").asInt(443);
    JsonNode target = objects.stream()
        .filter(o -> kind(o).equals("Service") && o.path("metadata").path("name").asString("").equals(name))
        .flatMap(o -> stream(o.path("spec").path("ports")))
        .filter(p -> p.path("port").asInt() == port)
        .map(p -> p.has("targetPort") ? p.path("targetPort") : p.path("port"))
        .findFirst()
        .orElseThrow(() -> new UnavailableException("the reference deployment's webhook calls Service " + name + " port " + port + ", which it does not define"));
    if (target.isNumber()) {
      return target.asInt();
    }
    for (JsonNode c : schedulerWorkload.path("spec").path("template").path("spec").path("containers")) {
      for (JsonNode p : c.path("ports")) {
        if (p.path("name").asString("").equals(target.asString())) {
          return p.path("containerPort").asInt();
        }
      }
    }
    throw new UnavailableException("the reference deployment's Service " + name + " sends port " + port + " to a container port named " + target.asString() + " that no container has");
  }

  /**
   * The device configuration the scheduler reads: the {@code device-config.yaml} of whichever ConfigMap of
   * the deployment carries one.
   *
   * @throws UnavailableException when none does
   */
  public String deviceConfiguration() {
    return objects.stream()
        .filter(o -> kind(o).equals("ConfigMap"))
        .map(o -> o.path("data").path("device-config.yaml").asString(""))
        .filter(content -> !content.isEmpty())
        .findFirst()
        .orElseThrow(() -> new UnavailableException("no ConfigMap of the reference deployment in " + directory + " has data.device-config.yaml"));
  }

  private static java.util.stream.Stream<JsonNode> stream(JsonNode array) {
    List<JsonNode> items = new ArrayList<>();
    array.forEach(items::add);
    return items.stream();
  }

  private static String kind(JsonNode object) {
    return object.path("kind").asString("");
  }

  private static List<JsonNode> readAll(Path directory) {
    List<Path> files;
    try (var listing = Files.list(directory)) {
      files = listing.filter(f -> f.getFileName().toString().endsWith(".yaml")).sorted().toList();
    } catch (IOException e) {
      throw new UnavailableException("cannot read the reference deployment's directory " + directory + ": " + e.getMessage());
    }
    List<JsonNode> documents = new ArrayList<>();
    for (Path path : files) {
      try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(Files.readString(path))) {
        while (it.hasNextValue()) {
          JsonNode doc = it.nextValue();
          if (doc != null && !doc.isNull() && doc.isObject()) {
            documents.add(doc);
          }
        }
      } catch (IOException | RuntimeException e) {
        throw new UnavailableException("cannot read the reference deployment's " + path + ": " + e.getMessage());
      }
    }
    return documents;
  }

  /** The workload of this kind whose pod runs a container (or init container) of this name. */
  private JsonNode workload(String kind, String containerName) {
    for (JsonNode o : objects) {
      if (!kind(o).equals(kind)) {
        continue;
      }
      JsonNode spec = o.path("spec").path("template").path("spec");
      for (String list : List.of("containers", "initContainers")) {
        for (JsonNode c : spec.path(list)) {
          if (c.path("name").asString("").equals(containerName)) {
            return o;
          }
        }
      }
    }
    throw new UnavailableException("the reference deployment in " + directory + " has no " + kind + " with a container named " + containerName);
  }

  /** kube-scheduler's configuration: the ConfigMap file that is a KubeSchedulerConfiguration. */
  private JsonNode kubeSchedulerConfiguration() {
    for (JsonNode o : objects) {
      if (!kind(o).equals("ConfigMap")) {
        continue;
      }
      for (var file : o.path("data").properties()) {
        JsonNode content;
        try {
          content = YAML.readTree(file.getValue().asString(""));
        } catch (RuntimeException e) {
          continue; // not YAML: another kind of file
        }
        if (content != null && kind(content).equals("KubeSchedulerConfiguration")) {
          return content;
        }
      }
    }
    throw new UnavailableException("the reference deployment in " + directory + " has no ConfigMap holding a KubeSchedulerConfiguration");
  }

  private static boolean hasContainer(JsonNode workload, String name) {
    JsonNode spec = workload.path("spec").path("template").path("spec");
    for (String list : List.of("containers", "initContainers")) {
      for (JsonNode c : spec.path(list)) {
        if (c.path("name").asString("").equals(name)) {
          return true;
        }
      }
    }
    return false;
  }

  private Container container(JsonNode workload, String name) {
    JsonNode spec = workload.path("spec").path("template").path("spec");
    List<JsonNode> containers = new ArrayList<>();
    spec.path("initContainers").forEach(containers::add);
    spec.path("containers").forEach(containers::add);
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

      Map<String, String> nodeSelector = new LinkedHashMap<>();
      workload.path("spec").path("template").path("spec").path("nodeSelector").properties().forEach(n -> nodeSelector.put(n.getKey(), n.getValue().asString("")));
      Map<String, String> mounts = new LinkedHashMap<>();
      c.path("volumeMounts").forEach(m -> mounts.put(m.path("mountPath").asString(""), m.path("name").asString("")));
      return new Container(List.copyOf(args), env, fieldEnv, nodeSelector, mounts);
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
