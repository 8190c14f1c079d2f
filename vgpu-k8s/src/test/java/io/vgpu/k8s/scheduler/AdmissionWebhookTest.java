package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.server.HttpService;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** Golden AdmissionReview requests and responses, v1 and v1beta1. */
class AdmissionWebhookTest {
  private final AdmissionWebhook webhook =
      new AdmissionWebhook(new AdmissionMutator(DeviceConfig.DEFAULT, "hami-scheduler"), ns -> new QuotaUsage(ns, QuotaLimits.NONE, 0, 0));

  private String review(String apiVersion, String object) throws Exception {
    String body = "{\"apiVersion\":\"" + apiVersion + "\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
        + "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"team-a\",\"object\":" + object + "}}";
    return new String(webhook.review(body.getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
  }

  private static String patchOf(String response) {
    String marker = "\"patch\":\"";
    int start = response.indexOf(marker) + marker.length();
    return new String(Base64.getDecoder().decode(response.substring(start, response.indexOf('"', start))), StandardCharsets.UTF_8);
  }

  @Test
  void aBareGpuPodGetsTheSchedulerAndAnExclusiveCardV1() throws Exception {
    String response = review("admission.k8s.io/v1",
        "{\"metadata\":{\"generateName\":\"job-\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    assertThat(response).startsWith("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"");
    assertThat(patchOf(response))
        .isEqualTo("[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpucores\",\"value\":\"100\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
  }

  @Test
  void aDenialCarriesTheMessageV1beta1() throws Exception {
    String response = review("admission.k8s.io/v1beta1",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"securityContext\":{\"privileged\":true},\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    assertThat(response).isEqualTo("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
        + "\"allowed\":false,\"status\":{\"code\":403,\"message\":\"container c is privileged\"}}}");
  }

  @Test
  void theIgnoreLabelCountsOnlyInNamespacesTheDeviceConfigLists() throws Exception {
    String pod = "{\"metadata\":{\"name\":\"p\",\"labels\":{\"hami.io/webhook\":\"ignore\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}";
    // team-a is not listed: the label is a pod's own word and changes nothing.
    assertThat(patchOf(review("admission.k8s.io/v1", pod)))
        .isEqualTo("[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpucores\",\"value\":\"100\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
  }

  @Test
  void schedulerOwnedAnnotationsAndTheNodeLabelAreRemovedFromEveryCreatedPod() throws Exception {
    String annotations = "{\"hami.io/vgpu-node\":\"n1\",\"note\":\"kept\",\"hami.io/vgpu-devices-allocated\":\"GPU-a,NVIDIA,40960,100:;\","
        + "\"hami.io/vgpu-devices-to-allocate\":\"GPU-a,NVIDIA,40960,100:;\",\"hami.io/vgpu-time\":\"1700000000\",\"hami.io/bind-phase\":\"success\","
        + "\"hami.io/bind-time\":\"1700000000\",\"hami.io/gpu-scheduler-policy\":\"binpack\",\"vgpu.io/grant-signature\":\"v1.forged\"}";
    String response = review("admission.k8s.io/v1",
        "{\"metadata\":{\"name\":\"p\",\"annotations\":" + annotations + ",\"labels\":{\"app\":\"x\",\"hami.io/vgpu-node\":\"n1\"}},"
            + "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    assertThat(patchOf(response))
        .isEqualTo("[{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1vgpu-node\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1vgpu-devices-allocated\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1vgpu-devices-to-allocate\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1vgpu-time\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1bind-phase\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1bind-time\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/vgpu.io~1grant-signature\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/labels/hami.io~1vgpu-node\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpucores\",\"value\":\"100\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
    // A pod for another scheduler, or one without GPUs, keeps everything else but not the scheduler's annotations.
    String other = review("admission.k8s.io/v1",
        "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"hami.io/vgpu-node\":\"n1\"}},\"spec\":{\"schedulerName\":\"volcano\",\"containers\":[{\"name\":\"c\"}]}}");
    // Nothing is left of its annotations, so they go as a whole.
    assertThat(patchOf(other)).isEqualTo("[{\"op\":\"remove\",\"path\":\"/metadata/annotations\"}]");
  }

  @Test
  void inAListedNamespaceTheIgnoreLabelSkipsEverythingButTheRemoval() throws Exception {
    AdmissionWebhook listed = new AdmissionWebhook(
        new AdmissionMutator(DeviceConfig.DEFAULT.toBuilder().webhookIgnoreLabelNamespaces(java.util.List.of("team-a")).build(), "hami-scheduler"),
        ns -> new QuotaUsage(ns, QuotaLimits.NONE, 0, 0));
    String body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"namespace\":\"team-a\","
        + "\"object\":{\"metadata\":{\"name\":\"p\",\"labels\":{\"hami.io/webhook\":\"ignore\"},\"annotations\":{\"hami.io/vgpu-time\":\"1\"}},"
        + "\"spec\":{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"privileged\":true},\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}";
    String response = new String(listed.review(body.getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
    assertThat(response).contains("\"allowed\":true");
    assertThat(patchOf(response)).isEqualTo("[{\"op\":\"remove\",\"path\":\"/metadata/annotations\"}]");
  }

  @Test
  void aPodWithoutGpusIsAllowedWithoutAPatch() throws Exception {
    String response = review("admission.k8s.io/v1", "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    assertThat(response).endsWith("\"allowed\":true}}");
  }

  @Test
  void malformedReviewsAreBadRequests() {
    assertThatThrownBy(() -> webhook.review("{".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(HttpService.BadRequest.class).hasMessageStartingWith("malformed AdmissionReview JSON: ");
    assertThatThrownBy(() -> webhook.review("{\"request\":{}}".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(HttpService.BadRequest.class).hasMessage("AdmissionReview has no request.uid");
  }
}
