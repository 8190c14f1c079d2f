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
  void anIgnoredPodPassesUntouched() throws Exception {
    String response = review("admission.k8s.io/v1",
        "{\"metadata\":{\"name\":\"p\",\"labels\":{\"hami.io/webhook\":\"ignore\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    assertThat(response).isEqualTo("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"allowed\":true}}");
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
