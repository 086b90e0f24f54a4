"""The hash, signature and identifier engine (convert.digest), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_hashes_in_base64_and_crc32(run):
    out = run("hash-generator", text="", algorithms=["crc32", "sha256"], encoding="base64")
    assert out["hashes"] == [
        {"algorithm": "crc32", "digest": "AAAAAA=="},
        {"algorithm": "sha256", "digest": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
    ]
    assert out["matches"] is None


def test_hmac_matches_a_known_signature_and_rejects_a_bad_key(run):
    # RFC 4231 test case 2.
    expected = "5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843"
    out = run(
        "hmac-generator",
        message="what do ya want for nothing?",
        key="4a656665",
        key_encoding="hex",
        compare_with=expected,
    )
    assert out["matches"] is True
    with pytest.raises(EngineError, match="The key is not valid hex"):
        run("hmac-generator", message="m", key="zz", key_encoding="hex")


def test_uuid_v3_with_a_custom_namespace_is_deterministic(run):
    out = run("uuid-v5-generator", names="python.org", namespace="dns", version=3)
    assert out["uuids"] == [{"name": "python.org", "uuid": "6fa459ea-ee8a-3ca4-894e-db77e160355e"}]
    with pytest.raises(EngineError, match="is not a namespace"):
        run("uuid-v5-generator", names="x", namespace="nope")


def test_jwt_expiry_and_a_wrong_secret(run):
    token = load_example("jwt-decoder")["token"]
    out = run("jwt-decoder", token=f"Bearer {token}", secret="wrong", now="2025-03-14T11:00Z")
    assert (out["expired"], out["signature"]) == (True, "invalid")
    with pytest.raises(EngineError, match="three parts"):
        run("jwt-decoder", token="abc.def")


def load_example(slug):
    from catalogue import load_catalogue

    return load_catalogue().get(slug).examples[0]["input"]
