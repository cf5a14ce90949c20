package notify

import "strings"

// The messages' texts, per moment and language. The SMS body is the text
// with its parameters filled in; WhatsApp sends the template named
// TemplateName(moment) in the language, with the same parameters in the
// order of templateParams (a business registers those templates in its
// WhatsApp Manager with these bodies, {{1}}... in place of the names).
var texts = map[string]map[string]string{
	MomentJoined: {
		"en": "{queue}: you are number {code}. Follow your turn: {link}",
		"es": "{queue}: su turno es el {code}. Sígalo aquí: {link}",
		"pt": "{queue}: a sua senha é {code}. Acompanhe aqui: {link}",
		"fr": "{queue} : votre numéro est {code}. Suivez votre tour : {link}",
	},
	MomentNearFront: {
		"en": "{queue}: {code}, you are almost there ({ahead} ahead). Please come back.",
		"es": "{queue}: {code}, ya casi es su turno ({ahead} por delante). Acérquese, por favor.",
		"pt": "{queue}: {code}, está quase na sua vez ({ahead} à frente). Aproxime-se, por favor.",
		"fr": "{queue} : {code}, c'est bientôt votre tour ({ahead} devant vous). Merci de revenir.",
	},
	MomentCalled: {
		"en": "{queue}: {code}, it is your turn. Please go to {station}.",
		"es": "{queue}: {code}, es su turno. Diríjase a {station}.",
		"pt": "{queue}: {code}, é a sua vez. Dirija-se a {station}.",
		"fr": "{queue} : {code}, c'est votre tour. Présentez-vous à {station}.",
	},
	MomentCalledAgain: {
		"en": "{queue}: {code}, we are calling you again. Please go to {station} now.",
		"es": "{queue}: {code}, le llamamos de nuevo. Diríjase a {station} ahora.",
		"pt": "{queue}: {code}, estamos a chamá-lo novamente. Dirija-se a {station} agora.",
		"fr": "{queue} : {code}, nous vous appelons à nouveau. Présentez-vous à {station}.",
	},
	MomentNoShow: {
		"en": "{queue}: {code}, we called you and you did not come. Your turn was marked as missed.",
		"es": "{queue}: {code}, le llamamos y no se presentó. Su turno se marcó como perdido.",
		"pt": "{queue}: {code}, chamámos e não compareceu. A sua senha foi marcada como perdida.",
		"fr": "{queue} : {code}, nous vous avons appelé sans réponse. Votre tour est marqué manqué.",
	},
	MomentCancelled: {
		"en": "{queue}: {code}, your turn was cancelled.",
		"es": "{queue}: {code}, su turno fue cancelado.",
		"pt": "{queue}: {code}, a sua senha foi cancelada.",
		"fr": "{queue} : {code}, votre tour a été annulé.",
	},
	MomentForwarded: {
		"en": "{queue}: {code}, you were sent on to this queue. Follow your turn: {link}",
		"es": "{queue}: {code}, le hemos pasado a esta cola. Sígalo aquí: {link}",
		"pt": "{queue}: {code}, foi encaminhado para esta fila. Acompanhe aqui: {link}",
		"fr": "{queue} : {code}, vous avez été orienté vers cette file. Suivez votre tour : {link}",
	},
	MomentReminder: {
		"en": "{queue}: reminder, your appointment is at {time}.",
		"es": "{queue}: recordatorio, su cita es a las {time}.",
		"pt": "{queue}: lembrete, a sua marcação é às {time}.",
		"fr": "{queue} : rappel, votre rendez-vous est à {time}.",
	},
}

// templateParams are each moment's parameters, in the order a WhatsApp
// template numbers them ({{1}}, {{2}}, ...).
var templateParams = map[string][]string{
	MomentJoined:      {"queue", "code", "link"},
	MomentNearFront:   {"queue", "code", "ahead"},
	MomentCalled:      {"queue", "code", "station"},
	MomentCalledAgain: {"queue", "code", "station"},
	MomentNoShow:      {"queue", "code"},
	MomentCancelled:   {"queue", "code"},
	MomentForwarded:   {"queue", "code", "link"},
	MomentReminder:    {"queue", "time"},
}

// TemplateName is the WhatsApp template of a moment: qms_<moment>.
func TemplateName(moment string) string { return "qms_" + moment }

// Render is the text of a moment in a language (English when the
// language has none) with params filled in.
func Render(moment, lang string, params map[string]string) string {
	t, ok := texts[moment][lang]
	if !ok {
		t = texts[moment]["en"]
	}
	return fill(t, params)
}

// fill puts params in text's {name} placeholders.
func fill(t string, params map[string]string) string {
	pairs := make([]string, 0, 2*len(params))
	for k, v := range params {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(t)
}

// Params are a moment's template parameters in order.
func Params(moment string, params map[string]string) []string {
	names := templateParams[moment]
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = params[n]
	}
	return out
}
