package io.vgpu.examples.throughput;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.Device;
import io.vgpu.api.PodGrant;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.scheduler.NodeHealth;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import tools.jackson.databind.node.ObjectNode;

/**
 * The objects of the benchmark's cluster, shaped as a cluster holds them: GPU nodes of 8 cards as the
 * node agent registers them (its {@link DeviceRegistrar} and {@link NodeRegisterCodec}) and kubelet
 * reports them, and pods as a Deployment's ReplicaSet creates them — owner reference, service account
 * volume, tolerations, environment — with the GPU shares of the lab report's pods: 1024–8192 MiB and
 * 10–50 cores on one card, a tenth of them on two cards. Running pods carry what kubelet and the
 * controllers add (status, container statuses, managed fields), about 5 KB each, as in a real cluster.
 */
final class SyntheticCluster {
  /** The namespace of the benchmark's pods. */
  static final String NAMESPACE = "bench";
  /** Cards per node. */
  static final int CARDS_PER_NODE = 8;
  static final String MODEL = "NVIDIA A100-SXM4-40GB";
  static final long CARD_MEMORY_MIB = 40960;
  private static final DateTimeFormatter GO_DATE_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss");

  private final DeviceConfig config;
  private final Map<String, String> nodeLabels;
  private final String schedulerName;

  /**
   * @param config the device configuration the node agents and the scheduler read
   * @param nodeLabels labels every GPU node carries (the node agent DaemonSet's node selector)
   * @param schedulerName the scheduler the pods name (as the admission webhook sets it)
   */
  SyntheticCluster(DeviceConfig config, Map<String, String> nodeLabels, String schedulerName) {
    this.config = config;
    this.nodeLabels = Map.copyOf(nodeLabels);
    this.schedulerName = schedulerName;
  }

  /** The name of node {@code i} (0-based). */
  static String nodeName(int i) {
    return String.format(Locale.ROOT, "gpu-node-%05d", i);
  }

  /** Node {@code i}'s cards as NVML reports them. */
  static List<Device> devices(int node) {
    List<Device> out = new ArrayList<>();
    for (int card = 0; card < CARDS_PER_NODE; card++) {
      String uuid = String.format(Locale.ROOT, "GPU-%08x-%04x-4000-8000-%012x", node, card, (long) node * CARDS_PER_NODE + card);
      out.add(new Device(uuid, card, MODEL, CARD_MEMORY_MIB, card / 4, true, String.format(Locale.ROOT, "00000000:%02X:00.0", 0x07 + card * 8)));
    }
    return out;
  }

  /** What the node agent registers for node {@code i}. */
  List<SchedulableDevice> registered(int node) {
    return new DeviceRegistrar(config.schema().vendor()).register(devices(node), config.sharing());
  }

  /** Node {@code i} as the API server holds it once its node agent registered and kubelet reported its devices. */
  Node node(int i) {
    List<SchedulableDevice> registered = registered(i);
    int replicas = registered.stream().mapToInt(SchedulableDevice::splitCount).sum();
    String name = nodeName(i);
    ObjectNode node = PodJson.mapper().createObjectNode();
    node.put("apiVersion", "v1");
    node.put("kind", "Node");
    ObjectNode metadata = node.putObject("metadata");
    metadata.put("name", name);
    ObjectNode labels = metadata.putObject("labels");
    labels.put("kubernetes.io/hostname", name);
    labels.put("kubernetes.io/os", "linux");
    labels.put("kubernetes.io/arch", "amd64");
    labels.put("node.kubernetes.io/instance-type", "a2-highgpu-8g");
    labels.put("topology.kubernetes.io/zone", "zone-" + (char) ('a' + i % 3));
    nodeLabels.forEach(labels::put);
    ObjectNode annotations = metadata.putObject("annotations");
    annotations.put(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(registered));
    annotations.put(NodeHealth.HANDSHAKE, "Requesting_" + GO_DATE_TIME.format(LocalDateTime.now(ZoneOffset.UTC)));
    annotations.put("node.alpha.kubernetes.io/ttl", "0");
    annotations.put("volumes.kubernetes.io/controller-managed-attach-detach", "true");
    ObjectNode spec = node.putObject("spec");
    spec.put("podCIDR", "10." + (i / 256 % 256) + "." + (i % 256) + ".0/24");
    spec.put("providerID", "gce://bench/zone/" + name);
    ObjectNode status = node.putObject("status");
    for (String section : List.of("capacity", "allocatable")) {
      ObjectNode resources = status.putObject(section);
      resources.put("cpu", "96");
      resources.put("memory", "1376Gi");
      resources.put("pods", "110");
      resources.put("ephemeral-storage", "1Ti");
      resources.put(config.schema().countResource(), Integer.toString(replicas));
    }
    ObjectNode ready = status.putArray("conditions").addObject();
    ready.put("type", "Ready");
    ready.put("status", "True");
    ready.put("reason", "KubeletReady");
    ready.put("message", "kubelet is posting ready status");
    ObjectNode address = status.putArray("addresses").addObject();
    address.put("type", "InternalIP");
    address.put("address", "10.128." + (i / 256 % 256) + "." + (i % 256));
    ObjectNode info = status.putObject("nodeInfo");
    info.put("kubeletVersion", "v1.31.0");
    info.put("containerRuntimeVersion", "containerd://1.7.20");
    info.put("osImage", "Ubuntu 22.04.4 LTS");
    info.put("kernelVersion", "5.15.0-1061-gcp");
    info.put("architecture", "amd64");
    info.put("operatingSystem", "linux");
    return PodJson.mapper().treeToValue(node, Node.class);
  }

  /**
   * The GPU share of one pod: memory and cores on each of its cards.
   *
   * @param cards how many cards
   * @param memoryMiB memory on each card
   * @param cores percent of each card's compute
   */
  record Share(int cards, int memoryMiB, int cores) {}

  /** {@code count} shares drawn with {@code seed}: 1024–8192 MiB, 10–50 cores, one card; a tenth on two. */
  static List<Share> shares(int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    List<Share> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      int cards = random.nextInt(10) == 0 ? 2 : 1;
      int memory = 1024 + 256 * random.nextInt(29);
      int cores = 10 + 5 * random.nextInt(9);
      out.add(new Share(cards, memory, cores));
    }
    return out;
  }

  /** A pod waiting to be scheduled, as the ReplicaSet controller creates it and the webhook admits it. */
  Pod pending(String name, Share share) {
    return PodJson.mapper().treeToValue(podTree(name, share), Pod.class);
  }

  /**
   * A pod that runs on a node with {@code grant}: bound, allocated (its handshake done), its containers
   * started, with what kubelet and the controllers write.
   */
  Pod running(String name, Share share, PodGrant grant, Instant started) {
    ObjectNode pod = podTree(name, share);
    ObjectNode metadata = (ObjectNode) pod.get("metadata");
    String devices = DeviceListCodec.encode(grant);
    String epoch = Long.toString(started.getEpochSecond());
    ObjectNode annotations = metadata.withObject("annotations");
    annotations.put(HamiAnnotations.ASSIGNED_NODE, grant.node());
    annotations.put(HamiAnnotations.ASSIGNED_TIME, epoch);
    annotations.put(HamiAnnotations.DEVICES_ALLOCATED, devices);
    annotations.put(HamiAnnotations.DEVICES_TO_ALLOCATE, ";");
    annotations.put(HamiAnnotations.BIND_PHASE, "success");
    annotations.put(HamiAnnotations.BIND_TIME, epoch);
    metadata.withObject("labels").put(HamiAnnotations.ASSIGNED_NODE, grant.node());
    metadata.set("managedFields", PodJson.mapper().readTree(MANAGED_FIELDS.replace("%TIME%", started.toString())));
    ((ObjectNode) pod.get("spec")).put("nodeName", grant.node());
    String time = started.truncatedTo(ChronoUnit.SECONDS).toString();
    ObjectNode status = pod.putObject("status");
    status.put("phase", "Running");
    var conditions = status.putArray("conditions");
    for (String type : List.of("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")) {
      ObjectNode c = conditions.addObject();
      c.put("type", type);
      c.put("status", "True");
      c.put("lastTransitionTime", time);
    }
    status.put("hostIP", "10.128.0.1");
    status.putArray("hostIPs").addObject().put("ip", "10.128.0.1");
    String podIp = "10.64." + (Math.abs(name.hashCode()) % 250) + "." + (Math.abs(name.hashCode() / 250) % 250);
    status.put("podIP", podIp);
    status.putArray("podIPs").addObject().put("ip", podIp);
    status.put("startTime", time);
    status.put("qosClass", "Burstable");
    ObjectNode container = status.putArray("containerStatuses").addObject();
    container.put("name", "trainer");
    container.put("ready", true);
    container.put("started", true);
    container.put("restartCount", 0);
    container.put("image", "registry.example.com/ml/trainer:1.4.2");
    container.put("imageID", "registry.example.com/ml/trainer@sha256:" + "5f0a8c0d9e4b".repeat(5) + "1a2b");
    container.put("containerID", "containerd://" + UUID.nameUUIDFromBytes(name.getBytes()).toString().replace("-", "") + "0123456789abcdef0123456789abcdef");
    container.putObject("state").putObject("running").put("startedAt", time);
    container.putObject("lastState");
    return PodJson.mapper().treeToValue(pod, Pod.class);
  }

  private ObjectNode podTree(String name, Share share) {
    String hash = "7d9c5b6f4";
    ObjectNode pod = PodJson.mapper().createObjectNode();
    pod.put("apiVersion", "v1");
    pod.put("kind", "Pod");
    ObjectNode metadata = pod.putObject("metadata");
    metadata.put("name", name);
    metadata.put("namespace", NAMESPACE);
    metadata.put("generateName", "trainer-" + hash + "-");
    ObjectNode labels = metadata.putObject("labels");
    labels.put("app.kubernetes.io/name", "trainer");
    labels.put("app.kubernetes.io/part-of", "ml-platform");
    labels.put("pod-template-hash", hash);
    labels.put("team", "vision");
    metadata.putObject("annotations").put("kubectl.kubernetes.io/default-container", "trainer");
    ObjectNode owner = metadata.putArray("ownerReferences").addObject();
    owner.put("apiVersion", "apps/v1");
    owner.put("kind", "ReplicaSet");
    owner.put("name", "trainer-" + hash);
    owner.put("uid", "3f1c2a4e-8b7d-4c6e-9a5f-1d2e3c4b5a69");
    owner.put("controller", true);
    owner.put("blockOwnerDeletion", true);
    ObjectNode spec = pod.putObject("spec");
    spec.put("schedulerName", schedulerName);
    spec.put("restartPolicy", "Always");
    spec.put("terminationGracePeriodSeconds", 30);
    spec.put("dnsPolicy", "ClusterFirst");
    spec.put("serviceAccountName", "default");
    spec.put("serviceAccount", "default");
    spec.put("enableServiceLinks", true);
    spec.put("preemptionPolicy", "PreemptLowerPriority");
    spec.put("priority", 0);
    spec.putObject("securityContext");
    ObjectNode container = spec.putArray("containers").addObject();
    container.put("name", "trainer");
    container.put("image", "registry.example.com/ml/trainer:1.4.2");
    container.put("imagePullPolicy", "IfNotPresent");
    container.putArray("command").add("python").add("-m").add("trainer.main");
    container.putArray("args").add("--config=/etc/trainer/config.yaml").add("--epochs=90").add("--checkpoint-dir=/data/checkpoints");
    var env = container.putArray("env");
    for (String[] kv : new String[][] {{"TRAINER_MODE", "distributed"}, {"NCCL_DEBUG", "WARN"}, {"PYTHONUNBUFFERED", "1"}, {"OMP_NUM_THREADS", "8"}}) {
      env.addObject().put("name", kv[0]).put("value", kv[1]);
    }
    ObjectNode resources = container.putObject("resources");
    ObjectNode limits = resources.putObject("limits");
    limits.put(config.schema().countResource(), Integer.toString(share.cards()));
    limits.put(config.schema().memoryResource(), Integer.toString(share.memoryMiB()));
    limits.put(config.schema().coresResource(), Integer.toString(share.cores()));
    limits.put("memory", "32Gi");
    ObjectNode requests = resources.putObject("requests");
    requests.put("cpu", "4");
    requests.put("memory", "16Gi");
    var mounts = container.putArray("volumeMounts");
    mounts.addObject().put("name", "data").put("mountPath", "/data");
    mounts.addObject().put("name", "kube-api-access-x7k2p").put("mountPath", "/var/run/secrets/kubernetes.io/serviceaccount").put("readOnly", true);
    container.put("terminationMessagePath", "/dev/termination-log");
    container.put("terminationMessagePolicy", "File");
    var volumes = spec.putArray("volumes");
    volumes.addObject().put("name", "data").putObject("emptyDir");
    volumes.add(PodJson.mapper().readTree(API_ACCESS_VOLUME));
    var tolerations = spec.putArray("tolerations");
    for (String key : List.of("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")) {
      tolerations.addObject().put("key", key).put("operator", "Exists").put("effect", "NoExecute").put("tolerationSeconds", 300);
    }
    return pod;
  }

  private static final String API_ACCESS_VOLUME =
      """
      {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}
      """;

  /** What server-side apply tracking adds to every pod: the controller's fields and kubelet's status fields. */
  private static final String MANAGED_FIELDS =
      """
      [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "%TIME%", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:app.kubernetes.io/part-of": {},
          "f:pod-template-hash": {}, "f:team": {}}, "f:ownerReferences": {".": {}, "k:{\\"uid\\":\\"3f1c2a4e-8b7d-4c6e-9a5f-1d2e3c4b5a69\\"}": {}}},
          "f:spec": {"f:containers": {"k:{\\"name\\":\\"trainer\\"}": {".": {}, "f:args": {}, "f:command": {}, "f:env": {".": {},
            "k:{\\"name\\":\\"NCCL_DEBUG\\"}": {".": {}, "f:name": {}, "f:value": {}}, "k:{\\"name\\":\\"OMP_NUM_THREADS\\"}": {".": {}, "f:name": {}, "f:value": {}},
            "k:{\\"name\\":\\"PYTHONUNBUFFERED\\"}": {".": {}, "f:name": {}, "f:value": {}}, "k:{\\"name\\":\\"TRAINER_MODE\\"}": {".": {}, "f:name": {}, "f:value": {}}},
            "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}, "f:nvidia.com/gpu": {},
            "f:nvidia.com/gpucores": {}, "f:nvidia.com/gpumem": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}, "f:volumeMounts": {".": {}, "k:{\\"mountPath\\":\\"/data\\"}": {".": {},
            "f:mountPath": {}, "f:name": {}}}}}, "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
            "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {".": {}, "k:{\\"name\\":\\"data\\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}}}}},
       {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "%TIME%", "fieldsType": "FieldsV1", "subresource": "status",
        "fieldsV1": {"f:status": {"f:conditions": {"k:{\\"type\\":\\"ContainersReady\\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
          "f:status": {}, "f:type": {}}, "k:{\\"type\\":\\"Initialized\\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {},
          "f:type": {}}, "k:{\\"type\\":\\"PodReadyToStartContainers\\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {},
          "f:type": {}}, "k:{\\"type\\":\\"Ready\\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
          "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\\"ip\\":\\"10.64.0.1\\"}": {".": {},
          "f:ip": {}}}, "f:startTime": {}}}},
       {"manager": "vgpu-scheduler", "operation": "Update", "apiVersion": "v1", "time": "%TIME%", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {"f:hami.io/bind-phase": {}, "f:hami.io/bind-time": {}, "f:hami.io/vgpu-devices-allocated": {},
          "f:hami.io/vgpu-devices-to-allocate": {}, "f:hami.io/vgpu-node": {}, "f:hami.io/vgpu-time": {}}, "f:labels": {"f:hami.io/vgpu-node": {}}}}}]
      """;
}
