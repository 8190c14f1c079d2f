package io.vgpu.examples.lab.kai;

import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * KAI's binder's GPU reservation pods (kai.md §1.6): one per GPU group, in {@code
 * kai-resource-reservation}, named after its node and group, already on its node, asking for one whole
 * card, so that the card the device plugin gives it is the card the group's fraction pods share.
 */
public final class ReservationPods {
  /** The reservation pods' ServiceAccount and {@code app} label value: the namespace's name, as KAI names them. */
  public static final String SERVICE_ACCOUNT = KaiKeys.RESERVATION_NAMESPACE;
  /** The reservation pod's container. */
  public static final String CONTAINER = "resource-reservation";

  private ReservationPods() {}

  /** {@code gpu-reservation-} + the first 8 bytes of {@code sha256(node + "/" + group)} in hex. */
  public static String name(String node, String group) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest((node + "/" + group).getBytes(StandardCharsets.UTF_8));
      return "gpu-reservation-" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JVM has no SHA-256", e);
    }
  }

  /**
   * The reservation pod of a group.
   *
   * @param sharedPod the fraction pod the group is made for: its tolerations are copied
   * @param image the reservation image ({@code --resource-reservation-image})
   * @param args the container's args (the lab's image runs what they say)
   * @param runtimeClassName {@code --runtime-class-name}; empty for none
   */
  public static ObjectNode pod(String node, String group, JsonNode sharedPod, String image, List<String> args, String runtimeClassName) {
    ObjectNode pod = PodJson.mapper().createObjectNode();
    pod.put("apiVersion", "v1");
    pod.put("kind", "Pod");
    ObjectNode metadata = pod.putObject("metadata");
    metadata.put("name", name(node, group));
    metadata.put("namespace", KaiKeys.RESERVATION_NAMESPACE);
    metadata.putObject("labels").put("app", KaiKeys.RESERVATION_NAMESPACE).put(KaiKeys.GPU_GROUP, group);
    metadata.putObject("annotations").put("karpenter.sh/do-not-disrupt", "true");
    ObjectNode spec = pod.putObject("spec");
    spec.put("nodeName", node);
    spec.put("serviceAccountName", SERVICE_ACCOUNT);
    if (!runtimeClassName.isEmpty()) {
      spec.put("runtimeClassName", runtimeClassName);
    }
    JsonNode tolerations = sharedPod.path("spec").path("tolerations");
    if (tolerations.isArray() && !tolerations.isEmpty()) {
      spec.set("tolerations", tolerations.deepCopy());
    }
    ObjectNode container = spec.putArray("containers").addObject();
    container.put("name", CONTAINER);
    container.put("image", image);
    if (!args.isEmpty()) {
      ArrayNode a = container.putArray("args");
      args.forEach(a::add);
    }
    ArrayNode env = container.putArray("env");
    env.addObject().put("name", "POD_NAME").putObject("valueFrom").putObject("fieldRef").put("fieldPath", "metadata.name");
    env.addObject().put("name", "POD_NAMESPACE").putObject("valueFrom").putObject("fieldRef").put("fieldPath", "metadata.namespace");
    ObjectNode resources = container.putObject("resources");
    resources.putObject("limits").put(KaiGpuRequest.GPU_RESOURCE, "1");
    resources.putObject("requests").put(KaiGpuRequest.GPU_RESOURCE, "1");
    return pod;
  }
}
