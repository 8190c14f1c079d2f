package io.vgpu.examples.lab.apiserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the lab's API server adds to fabric8's CRUD mock, over real HTTP with fabric8's client. */
class ApiServerStandInTest {
  private final ApiServerStandIn api = ApiServerStandIn.start();
  private final KubernetesClient client = api.client();

  @AfterEach
  void stop() {
    client.close();
    api.close();
  }

  private Pod create(String name) {
    Pod pod = new PodBuilder().withNewMetadata().withName(name).endMetadata().withNewSpec().addNewContainer().withName("c").withImage("i").endContainer().endSpec().build();
    return client.pods().inNamespace("default").resource(pod).create();
  }

  private Binding binding(Pod pod, String node) {
    return new BindingBuilder()
        .withNewMetadata().withName(pod.getMetadata().getName()).withNamespace("default").withUid(pod.getMetadata().getUid()).endMetadata()
        .withNewTarget().withKind("Node").withName(node).endTarget()
        .build();
  }

  /**
   * A watch's WebSocket upgrade offered {@code permessage-deflate}, as OkHttp offers it on every upgrade,
   * is answered without it: a real API server never compresses watch events, and the stand-in must not
   * make its clients inflate them.
   */
  @Test
  void aWatchUpgradeOfferingDeflateIsAnsweredWithoutCompression(@TempDir Path temp) throws Exception {
    String kubeconfig = Files.readString(api.writeKubeconfig(temp.resolve("kubeconfig"), UserInfo.ADMIN));
    String token = kubeconfig.replaceAll("(?s).*token: \"([^\"]+)\".*", "$1");
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), api.port())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write(("GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\n"
              + "Host: 127.0.0.1:" + api.port() + "\r\n"
              + "Authorization: Bearer " + token + "\r\n"
              + "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
              + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
      List<String> head = new ArrayList<>();
      for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
        head.add(line.toLowerCase(Locale.ROOT));
      }
      assertThat(head).first().asString().startsWith("http/1.1 101");
      assertThat(head).contains("upgrade: websocket").noneMatch(h -> h.startsWith("sec-websocket-extensions"));
    }
  }

  @Test
  void aBindingSetsTheNodeOnceAndConflictsAfter() {
    Pod pod = create("p1");
    client.bindings().inNamespace("default").resource(binding(pod, "n1")).create();
    Pod bound = client.pods().inNamespace("default").withName("p1").get();
    assertThat(bound.getSpec().getNodeName()).isEqualTo("n1");
    assertThat(bound.getStatus().getConditions()).anySatisfy(c -> assertThat(c.getType() + "=" + c.getStatus()).isEqualTo("PodScheduled=True"));
    assertThatThrownBy(() -> client.bindings().inNamespace("default").resource(binding(pod, "n2")).create())
        .isInstanceOf(KubernetesClientException.class)
        .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(409));
    assertThat(client.pods().inNamespace("default").withName("p1").get().getSpec().getNodeName()).isEqualTo("n1");
  }

  @Test
  void aBindingForAnotherIncarnationOfThePodConflicts() {
    Pod pod = create("p1");
    Binding stale = binding(pod, "n1");
    stale.getMetadata().setUid("not-the-pod");
    assertThatThrownBy(() -> client.bindings().inNamespace("default").resource(stale).create())
        .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(409));
  }

  @Test
  void podsListedAndWatchedByNodeNameAreThoseOnTheNode() throws Exception {
    BlockingQueue<String> events = new LinkedBlockingQueue<>();
    var watch = client.pods().inAnyNamespace().withField("spec.nodeName", "n1").watch(new Watcher<>() {
      @Override
      public void eventReceived(Action action, Pod resource) {
        events.add(action + " " + resource.getMetadata().getName());
      }

      @Override
      public void onClose(WatcherException cause) {}
    });
    try {
      Pod a = create("a");
      Pod b = create("b");
      client.bindings().inNamespace("default").resource(binding(b, "n2")).create();
      client.bindings().inNamespace("default").resource(binding(a, "n1")).create();
      assertThat(events.poll(5, TimeUnit.SECONDS)).isEqualTo("ADDED a");
      assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactly("a");
      client.pods().inNamespace("default").withName("b").delete();
      client.pods().inNamespace("default").withName("a").delete();
      assertThat(events.poll(5, TimeUnit.SECONDS)).isEqualTo("DELETED a");
      assertThat(events.poll(300, TimeUnit.MILLISECONDS)).isNull();
      assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").list().getItems()).isEmpty();
      // The same name again, unbound: the node's list must not find it through what the first one was.
      create("a");
      assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").list().getItems()).isEmpty();
    } finally {
      watch.close();
    }
    assertThat(List.of()).isEmpty();
  }

  @Test
  void loadedObjectsAreStoredAsCreatedOnesAreAndADuplicateIsRefused() {
    Pod pod = new PodBuilder().withNewMetadata().withName("loaded").withNamespace("default").addToLabels("k", "v").endMetadata()
        .withNewSpec().withNodeName("n1").addNewContainer().withName("c").withImage("i").endContainer().endSpec().build();
    Node node = new NodeBuilder().withNewMetadata().withName("n1").addToAnnotations("a", "b").endMetadata().build();
    api.load(List.of(node, pod));

    Pod stored = client.pods().inNamespace("default").withName("loaded").get();
    assertThat(stored.getMetadata().getUid()).isNotBlank();
    assertThat(stored.getMetadata().getResourceVersion()).isNotBlank();
    assertThat(stored.getMetadata().getCreationTimestamp()).isNotBlank();
    assertThat(stored.getSpec().getNodeName()).isEqualTo("n1");
    assertThat(client.pods().inAnyNamespace().withLabel("k", "v").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactly("loaded");
    assertThat(client.nodes().withName("n1").get().getMetadata().getAnnotations()).containsEntry("a", "b");
    assertThatThrownBy(() -> api.load(List.of(pod))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Pod loaded").hasMessageContaining("409");
  }

  @Test
  void aNodesPodListAlsoAppliesTheRequestsNamespaceAndLabelSelector() {
    client.namespaces().resource(new io.fabric8.kubernetes.api.model.NamespaceBuilder().withNewMetadata().withName("other").endMetadata().build()).create();
    List<Pod> pods = new ArrayList<>();
    for (String[] p : new String[][] {{"default", "x", "v", "n1"}, {"default", "y", "w", "n1"}, {"other", "z", "v", "n1"}, {"default", "u", "v", "n2"}}) {
      pods.add(new PodBuilder().withNewMetadata().withName(p[1]).withNamespace(p[0]).addToLabels("k", p[2]).endMetadata()
          .withNewSpec().withNodeName(p[3]).addNewContainer().withName("c").withImage("i").endContainer().endSpec().build());
    }
    api.load(pods);

    assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactlyInAnyOrder("x", "y", "z");
    assertThat(client.pods().inNamespace("default").withField("spec.nodeName", "n1").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactlyInAnyOrder("x", "y");
    assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").withLabel("k", "v").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactlyInAnyOrder("x", "z");
    assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n3").list().getItems()).isEmpty();
    client.pods().inNamespace("default").withName("x").edit(p -> {
      p.getMetadata().getLabels().put("k", "w");
      return p;
    });
    assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").withLabel("k", "w").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactlyInAnyOrder("x", "y");
  }

  @Test
  void aWatchFromAResourceVersionSeesOnlyWhatChangedAfterIt() throws Exception {
    create("a");
    create("b");
    String listed = client.pods().inNamespace("default").list().getMetadata().getResourceVersion();
    BlockingQueue<String> fromList = new LinkedBlockingQueue<>();
    BlockingQueue<String> fromNow = new LinkedBlockingQueue<>();
    var since = client.pods().inNamespace("default").watch(new ListOptionsBuilder().withResourceVersion(listed).build(), recorder(fromList));
    var all = client.pods().inNamespace("default").watch(recorder(fromNow));
    try {
      create("c");
      client.pods().inNamespace("default").withName("a").edit(p -> new PodBuilder(p).editMetadata().addToLabels("x", "y").endMetadata().build());
      assertThat(List.of(fromList.poll(5, TimeUnit.SECONDS), fromList.poll(5, TimeUnit.SECONDS))).containsExactly("ADDED c", "MODIFIED a");
      assertThat(fromList.poll(300, TimeUnit.MILLISECONDS)).as("nothing older than the list").isNull();
      // A watch that names no version starts with every object, as the API server's does.
      List<String> replayed = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!replayed.containsAll(List.of("ADDED a", "ADDED b")) && System.nanoTime() < deadline) {
        String event = fromNow.poll(100, TimeUnit.MILLISECONDS);
        if (event != null) {
          replayed.add(event);
        }
      }
      assertThat(replayed).contains("ADDED a", "ADDED b");
    } finally {
      since.close();
      all.close();
    }
  }

  @Test
  void aListWithALimitIsPagedFromOneSnapshot() {
    for (String name : List.of("p1", "p2", "p3", "p4", "p5")) {
      create(name);
    }
    PodList first = client.pods().inNamespace("default").list(new ListOptionsBuilder().withLimit(2L).build());
    assertThat(first.getItems()).extracting(p -> p.getMetadata().getName()).containsExactly("p1", "p2");
    assertThat(first.getMetadata().getContinue()).isNotEmpty();
    create("p6");
    List<String> rest = new ArrayList<>();
    String token = first.getMetadata().getContinue();
    while (token != null && !token.isEmpty()) {
      PodList page = client.pods().inNamespace("default").list(new ListOptionsBuilder().withLimit(2L).withContinue(token).build());
      page.getItems().forEach(p -> rest.add(p.getMetadata().getName()));
      assertThat(page.getMetadata().getResourceVersion()).isEqualTo(first.getMetadata().getResourceVersion());
      token = page.getMetadata().getContinue();
    }
    assertThat(rest).as("the snapshot of the first page, without p6").containsExactly("p3", "p4", "p5");
    assertThatThrownBy(() -> client.pods().inNamespace("default").list(new ListOptionsBuilder().withLimit(2L).withContinue("unknown").build()))
        .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(410));
    // An informer that lists in pages gets every pod.
    var informer = client.pods().inNamespace("default").withLimit(2L).inform();
    try {
      assertThat(informer.getStore().list()).extracting(p -> p.getMetadata().getName()).containsExactlyInAnyOrder("p1", "p2", "p3", "p4", "p5", "p6");
    } finally {
      informer.close();
    }
  }

  @Test
  void versionIsAnsweredAsTheApiServerAnswersIt() {
    create("p1");
    assertThat(client.getKubernetesVersion().getGitVersion()).isEqualTo("v1.31.0");
  }

  private static Watcher<Pod> recorder(BlockingQueue<String> events) {
    return new Watcher<>() {
      @Override
      public void eventReceived(Action action, Pod resource) {
        events.add(action + " " + resource.getMetadata().getName());
      }

      @Override
      public void onClose(WatcherException cause) {}
    };
  }

  /**
   * The chart's webhook configuration, stored as the API server stores it, decides per pod: its CEL match
   * condition leaves a pod without vgpu resources alone (created as sent, the webhook never called), and a
   * pod asking for nvidia.com/gpu goes to the webhook — here a port nothing listens on, so the chart's
   * failurePolicy Fail refuses it as kube-apiserver would.
   */
  @Test
  void theChartsWebhookConfigurationIsFollowedAsStored() throws Exception {
    MutatingWebhookConfiguration chart;
    try (var in = Files.newInputStream(Path.of("deploy/scheduler-webhook.yaml"))) {
      chart = Serialization.unmarshal(in, MutatingWebhookConfiguration.class);
    }
    client.admissionRegistration().v1().mutatingWebhookConfigurations().resource(chart).create();
    api.admission(chart.getMetadata().getName(), URI.create("https://127.0.0.1:1"));

    Pod plain = create("plain");
    assertThat(plain.getMetadata().getName()).isEqualTo("plain");
    assertThat(plain.getSpec().getSchedulerName()).isNull();

    Pod wantsGpu = new PodBuilder().withNewMetadata().withName("gpu").endMetadata().withNewSpec().addNewContainer().withName("c").withImage("i")
        .withNewResources().addToLimits("nvidia.com/gpu", new Quantity("1")).endResources().endContainer().endSpec().build();
    assertThatThrownBy(() -> client.pods().inNamespace("default").resource(wantsGpu).create())
        .isInstanceOf(KubernetesClientException.class)
        .hasMessageContaining("failed calling webhook \"vgpu.hami.io\"");
    assertThat(client.pods().inNamespace("default").withName("gpu").get()).isNull();
  }
}
