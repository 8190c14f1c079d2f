package io.vgpu.k8s.certificates;

import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhook;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Writes a CA into the {@code caBundle} of every webhook of a MutatingWebhookConfiguration, so the
 * API server trusts the scheduler's self-made serving certificate. The patch tests each webhook's
 * name at its index first, so a configuration changed meanwhile fails the patch instead of getting
 * the bundle in the wrong place. Helm's three-way merge keeps a {@code caBundle} its manifest does not
 * name, so an upgrade leaves it in place.
 */
public final class WebhookCaBundle {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookCaBundle.class);
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final KubernetesClient client;
  private final String name;

  /** The MutatingWebhookConfiguration {@code name}. */
  public WebhookCaBundle(KubernetesClient client, String name) {
    this.client = client;
    this.name = name;
  }

  /**
   * Sets every webhook's {@code caBundle} to {@code caPem}, waiting up to {@code wait} for the
   * configuration to exist (Helm may create it after the scheduler's pod starts).
   *
   * @return whether a patch was needed
   * @throws IOException when the configuration does not appear in time or cannot be patched
   * @throws InterruptedException when interrupted while waiting
   */
  public boolean ensure(String caPem, Duration wait, Duration poll) throws IOException, InterruptedException {
    String bundle = Base64.getEncoder().encodeToString(caPem.getBytes(StandardCharsets.US_ASCII));
    long deadline = System.nanoTime() + wait.toNanos();
    MutatingWebhookConfiguration configuration;
    while (true) {
      try {
        configuration = client.admissionRegistration().v1().mutatingWebhookConfigurations().withName(name).get();
      } catch (KubernetesClientException e) {
        throw new IOException("cannot read MutatingWebhookConfiguration " + name + ": " + e.getMessage(), e);
      }
      if (configuration != null) {
        break;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new IOException("MutatingWebhookConfiguration " + name + " does not exist (waited " + wait.toSeconds() + " s)");
      }
      Thread.sleep(poll.toMillis());
    }
    List<MutatingWebhook> webhooks = configuration.getWebhooks() == null ? List.of() : configuration.getWebhooks();
    ArrayNode patch = JSON.createArrayNode();
    for (int i = 0; i < webhooks.size(); i++) {
      MutatingWebhook webhook = webhooks.get(i);
      if (bundle.equals(webhook.getClientConfig() == null ? null : webhook.getClientConfig().getCaBundle())) {
        continue;
      }
      ObjectNode test = patch.addObject();
      test.put("op", "test").put("path", "/webhooks/" + i + "/name").put("value", webhook.getName());
      ObjectNode add = patch.addObject();
      add.put("op", "add").put("path", "/webhooks/" + i + "/clientConfig/caBundle").put("value", bundle);
    }
    if (patch.isEmpty()) {
      LOG.info("MutatingWebhookConfiguration {} already trusts the serving CA", name);
      return false;
    }
    try {
      client.admissionRegistration().v1().mutatingWebhookConfigurations().withName(name).patch(PatchContext.of(PatchType.JSON), patch.toString());
    } catch (KubernetesClientException e) {
      throw new IOException("cannot patch the caBundle of MutatingWebhookConfiguration " + name + ": " + e.getMessage(), e);
    }
    LOG.info("MutatingWebhookConfiguration {}: caBundle set to the serving CA on {} webhook(s)", name, patch.size() / 2);
    return true;
  }
}
