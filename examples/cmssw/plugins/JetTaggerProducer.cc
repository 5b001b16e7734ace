// JetTaggerProducer.cc - the kiln-compiled jet tagger in a CMSSW stream
// module (sketch; see ../README.md: it cannot be built here).
// One module instance per stream, so the kiln::Context member is one context
// per stream; the weights are shared read-only by all streams.
#include <memory>
#include <vector>

#include <kiln/kiln.hpp>

#include "DataFormats/PatCandidates/interface/Jet.h"
#include "FWCore/Framework/interface/Event.h"
#include "FWCore/Framework/interface/MakerMacros.h"
#include "FWCore/Framework/interface/stream/EDProducer.h"
#include "FWCore/ParameterSet/interface/ParameterSet.h"

#include "jet_tagger.h"

class JetTaggerProducer : public edm::stream::EDProducer<> {
public:
  explicit JetTaggerProducer(const edm::ParameterSet& cfg)
      : jetsToken_(consumes<std::vector<pat::Jet>>(cfg.getParameter<edm::InputTag>("jets"))) {
    produces<std::vector<float>>();
  }

  void produce(edm::Event& event, const edm::EventSetup&) override {
    const auto& jets = event.get(jetsToken_);
    const auto n = static_cast<std::int64_t>(jets.size());   // 0 .. a few hundred
    features_.assign(jets.size() * JET_TAGGER_IN0_ELEMS, 0.f);
    for (std::size_t j = 0; j < jets.size(); j++)
      fillFeatures(jets[j], &features_[j * JET_TAGGER_IN0_ELEMS]);
    auto probs = std::make_unique<std::vector<float>>(jets.size() * JET_TAGGER_OUT0_ELEMS);
    ctx_.run(n, {features_}, {*probs});   // throws kiln::Error (a std::runtime_error)
    event.put(std::move(probs));
  }

private:
  static void fillFeatures(const pat::Jet& jet, float* f) {
    f[0] = jet.pt();
    f[1] = jet.eta();
    // ... the model's 16 features, in its training order
  }

  edm::EDGetTokenT<std::vector<pat::Jet>> jetsToken_;
  kiln::Context ctx_{jet_tagger_model};   // this stream's context
  std::vector<float> features_;
};

DEFINE_FWK_MODULE(JetTaggerProducer);
