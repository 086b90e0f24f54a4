import marshmallow as ma


class VoiceSchema(ma.Schema):
    id = ma.fields.String(
        required=True, metadata={"description": "Pass it as `voice` to speak with it."}
    )
    name = ma.fields.String(required=True)
    language = ma.fields.String(
        required=True,
        metadata={"description": "Language tag (e.g. en-US, fr); `mul` for many languages."},
    )
    engine = ma.fields.String(required=True, metadata={"enum": ["piper", "espeak-ng", "provider"]})


class VoiceListSchema(ma.Schema):
    voices = ma.fields.List(ma.fields.Nested(VoiceSchema), required=True)
    count = ma.fields.Integer(required=True)
